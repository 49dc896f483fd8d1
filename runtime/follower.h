// A replica's side of replication (docs/replication.md): `aup run --data
// DIR --replica-of ADDRESS`, or a replica of a cluster's primary. A thread
// of its own connects to the primary, says where the store stands (its
// last save, what its images cover, its term history, its schema:
// runtime/replication_stream.h), and does what the primary answers:
//
//   ok    takes the entries it is sent. It checks each (its payload's
//         digest, that it follows the last one, its term), and hands what
//         it has read to the owner thread (owner_tasks.h), which alone
//         changes the store and the state: each run of entries that
//         has arrived is written into the replica's own log, synced once,
//         and applied (Store::append_copies).
//         Then the thread acknowledges the save now durable.
//   cut   the replica holds entries after save K that the primary does
//         not: the owner cuts the log back to K (storage/cut.h: the
//         entries kept in a side file) and the process restarts, to open
//         the store as of K; when its images cover a later save it asks
//         for a copy instead.
//   copy  receives the primary's store into DIR/copy.partial
//         (storage/copy.h), verified, and restarts: the open installs it.
//
// A restart is the server's own stop (SIGTERM: what was taken is answered)
// followed by `aup run` starting again with the same arguments, so there
// is one way to open a store. A lost connection (the primary stopped, a
// network fault, a beat missing for kSilentSeconds) is followed by a new
// one a second later, from wherever the store then stands. A refusal (a
// module that differs) will not change by trying again: the follower stops
// and says why (`failed()`), and the server goes on answering queries.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/metrics.h"
#include "runtime/owner_tasks.h"
#include "runtime/replication_stream.h"
#include "storage/io.h"
#include "storage/store.h"

namespace aup::runtime {

// No frame from the primary for this long (it beats once a second): the
// connection is given up and made again.
inline constexpr int kSilentSeconds = 5;

class Follower {
 public:
  // `store` is the replica's (the owner thread's), `io` the one it was
  // opened with; `tasks` the server's way to the owner thread. `restart`
  // asks the process to stop serving and start again (the store is to be
  // reopened). Starts following at once.
  // `node`: this node's name in a cluster (runtime/cluster.h), or "".
  Follower(std::string primary, storage::Store& store, storage::Io& io, OwnerTasks& tasks, std::FILE* err,
           std::function<void()> restart, std::string node = "");
  ~Follower();  // stops following
  Follower(const Follower&) = delete;
  Follower& operator=(const Follower&) = delete;

  const std::string& primary() const { return primary_; }
  // Any thread: the last save durable here (and applied: a replica applies
  // an entry once it is durable), and the primary's last as it last said.
  uint64_t durable() const { return durable_.load(std::memory_order_acquire); }
  uint64_t primary_save() const { return primary_save_.load(std::memory_order_acquire); }
  bool connected() const { return connected_.load(std::memory_order_acquire); }
  // Any thread: whether this replica has held, at least once, the save
  // the primary had when it connected (a cluster's node with
  // --sync-replicas 0 takes over only then: runtime/cluster.h).
  bool caught_up_once() const { return caught_up_once_.load(std::memory_order_acquire); }
  // Any thread: how long this replica has not held the primary's last save
  // (0 while it does): the replica's lag in time.
  double lag_seconds() const;
  // Any thread: what the replication_* gauges say of this replica.
  ReplicationFigures figures() const;
  // Why following stopped for good ("" while it goes on).
  std::string failed() const;
  // The store is to be reopened (a cut or a copy): the process restarts.
  bool restarting() const { return restarting_.load(std::memory_order_acquire); }

 private:
  struct Received {
    uint32_t term = 0;
    uint64_t save = 0;
    std::vector<uint8_t> payload;
  };
  enum class Answer { Lost, Refused, Stream, Cut, Copy };
  void run();
  bool session();
  stream::Hello where();
  Answer handshake(int fd, std::string& buffered, uint64_t& cut_to);
  bool take_frames(int fd, std::vector<uint8_t>& in);
  bool receive_copy(int fd, std::vector<uint8_t>& in);
  bool cut(uint64_t save);
  struct Job;
  bool run_on_owner(std::function<std::string()> task);
  bool write_entries(std::vector<Received>& batch);
  bool send_ack(int fd);
  bool read_more(int fd, std::vector<uint8_t>& in, std::chrono::steady_clock::time_point& heard);
  void give_up(const std::string& why);
  void restart(const std::string& why);
  void say_caught_up();
  void heard_of(uint64_t save);
  void pause(std::chrono::milliseconds d);

  std::string primary_;
  storage::Store& store_;
  storage::Io& io_;
  OwnerTasks& tasks_;
  std::FILE* err_;
  std::function<void()> restart_;
  std::string node_;
  std::vector<uint8_t> schema_file_;  // the store's schema, as the handshake sends it
  std::atomic<uint64_t> durable_{0}, primary_save_{0};
  std::atomic<uint32_t> term_{0};
  std::atomic<int64_t> behind_since_ns_{0};  // steady clock; 0: not behind
  std::atomic<bool> connected_{false}, restarting_{false}, caught_up_once_{false};
  std::atomic<int> fd_{-1};  // the connection, for the destructor to shut down
  mutable std::mutex mu_;
  std::condition_variable cv_;  // the owner ran a task; or stopping
  bool stop_ = false;           // under mu_
  std::shared_ptr<Job> current_;  // under mu_: the task on the owner, if any
  std::string failed_;          // under mu_
  bool said_unreachable_ = false;
  bool ask_copy_ = false;        // the next handshake asks for a copy (a cut could not be made)
  uint64_t catch_up_to_ = 0;     // the primary's save at the handshake
  bool caught_up_said_ = false;
  std::thread thread_;
};

}  // namespace aup::runtime
