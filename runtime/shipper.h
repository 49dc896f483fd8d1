// A primary's side of replication (docs/replication.md). A replica
// connects to an address the primary listens on and sends `replicate` as
// its first request (runtime/replication_stream.h); the serving loop hands
// that connection to the Shipper, which feeds it from a thread of its own:
//
//   1. The handshake: the replica's module must be the primary's (its
//      store's schema, compared as a migration would compare it, every
//      difference named), and the replica must not be ahead.
//   2. Catching up: the thread reads the store's log as any reader of a
//      served store does (storage/live.h: the readers' lock, the live mark
//      as the cut) and sends every entry after the replica's save. If the
//      log no longer holds them (a checkpoint released them), or the
//      replica's last entry is not the primary's (another term wrote it),
//      the replica is refused, saying so.
//   3. Following: after each durable commit the owner calls committed();
//      each feed reads on to the new mark and sends what it finds. Idle, it
//      sends a beat once a second. It reads the replica's acks as they come.
//
// The log segments a connected replica still needs are not released: the
// owner hands retain_after() to the store before each checkpoint turn
// (storage::Store::retain_after). Nothing here changes the state, and no
// feed ever makes a commit wait.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "runtime/metrics.h"
#include "runtime/request.h"
#include "storage/io.h"
#include "storage/schema.h"

namespace aup::runtime {

class Feed;

class Shipper {
 public:
  // `dir`: the served store; `schema`: its schema (the module's tables and
  // the store's own); `io` must outlive the Shipper. Messages go to `err`.
  Shipper(storage::Io& io, std::string dir, storage::Schema schema, std::FILE* err);
  ~Shipper();  // stops and joins every feed
  Shipper(const Shipper&) = delete;
  Shipper& operator=(const Shipper&) = delete;

  // A serving loop's thread: takes over `fd` (a connection whose first
  // request, `r`, is `replicate`), from now on this Shipper's to answer
  // and close.
  void adopt(int fd, const Request& r);
  // The owner, after every durable commit: wakes each feed.
  void committed();
  // The owner: log entries after this save are kept (the least a connected
  // replica still needs; UINT64_MAX: none connected).
  uint64_t retain_after();

  // The save that at least `k` connected replicas have made durable (0
  // when fewer than `k` are connected): what --sync-replicas K waits for.
  uint64_t confirmed(uint32_t k);
  // Called on a feed's thread whenever a replica acknowledges a save (the
  // server wakes its owner with it); null: nobody is told. Set before the
  // server serves and cleared before it stops.
  void set_on_ack(std::function<void()> f);
  // A feed's thread: a replica acknowledged.
  void acked();

  // A cluster's (runtime/cluster.h), any thread. While this node is no
  // primary, replicas are refused `not_primary` with `why` (naming the
  // primary when there is one); "" serves them.
  void refuse_replicas(std::string why);
  // A cluster's: the replicas counted as synchronous, by node name (at
  // least k of them, or nothing is confirmed): confirmed() is from then on
  // the least save all of them hold (0 unless every one is connected), not
  // the k-th greatest of any replicas'.
  void set_synchronous(std::vector<std::string> nodes);
  // The greatest save confirmed() has ever returned: every save answered
  // since this node began leading is at or below it.
  uint64_t confirmed_high();

  // Replicas connected now, with what each has been sent, made durable
  // and applied (for stats).
  struct Replica {
    std::string node;  // a cluster's replica: its node's name
    uint64_t sent = 0, durable = 0, applied = 0;
  };
  std::vector<Replica> replicas();
  // A primary's replication_* gauges: `k` synchronous replicas wanted,
  // `term` its term. Any thread.
  ReplicationFigures figures(uint32_t k, uint32_t term);

 private:
  void reap();  // joins feeds that have ended (under mu_)

  storage::Io& io_;
  std::string dir_;
  storage::Schema schema_;
  std::FILE* err_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Feed>> feeds_;  // under mu_
  std::string refusal_;                    // under mu_: refuse_replicas()
  std::vector<std::string> synchronous_;   // under mu_
  bool counts_named_ = false;              // under mu_: set_synchronous() was called
  uint64_t confirmed_high_ = 0;            // under mu_
  std::mutex ack_mu_;
  std::function<void()> on_ack_;  // under ack_mu_
};

}  // namespace aup::runtime
