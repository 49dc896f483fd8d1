// A node of a cluster whose primary etcd elects (docs/replication.md, "A
// cluster with etcd"): `aup run MODULE --data DIR --listen ADDRESS
// --cluster etcd://HOST:PORT[,HOST:PORT...]/NAME --node ID --advertise
// ADDRESS`. aup runs no consensus of its own: etcd's election service
// decides who leads, its leases decide for how long, and the leader key's
// create revision is the term that fences a deposed primary out.
//
// Under /aup/NAME/ in etcd:
//   nodes/ID  this node's advertise address, under its lease: the members
//   leader    the election; a candidate's value names its node and address
//   sync      {"term":T,"nodes":[...]}: with --sync-replicas K ≥ 1, the
//             primary and the K replicas whose acknowledgements it counts,
//             written by the primary only while it leads (a transaction
//             on its leader key)
//
// Three threads talk to etcd, each with a client of its own:
//   - the lease's keepalive, every TTL/3. This node may believe it leads
//     until its last renewal was sent plus the TTL less a margin
//     (may_answer(), checked right before answers leave: a primary paused
//     past its lease answers no event once it runs again);
//   - a campaign, blocked in etcd until this node leads, while it may take
//     over: with K = 0 a node that caught up with the primary it follows
//     (or follows none), or any once the cluster has had no primary for
//     kLaggardWaitTtls TTLs; with K ≥ 1 a node the sync key names (it
//     holds every answered entry: each was acknowledged by all of them),
//     or any node before a primary ever wrote one;
//   - the control loop, every kTickMs: follows whoever leads (a Follower),
//     takes over when the campaign is won (stops following, begins the
//     term in the store, takes events), and, leading, keeps the sync set:
//     a synchronous replica that went is replaced by one that holds every
//     save answered so far, written to etcd before its acknowledgements
//     count.
//
// A primary that loses its lease, or sees another node lead, steps down:
// it answers no more events and starts again (`aup run` anew), to follow
// whoever leads then, cutting off its log what the new primary does not
// hold. What changes the store or the server's answers runs on the owner
// thread (OwnerTasks); these threads only decide.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "runtime/durability.h"
#include "runtime/etcd.h"
#include "runtime/follower.h"
#include "runtime/owner_tasks.h"
#include "runtime/shipper.h"
#include "storage/io.h"
#include "storage/store.h"

namespace aup::runtime {

struct ClusterOptions {
  std::vector<std::string> etcd;  // HOST:PORT, one or more
  std::string name;               // the cluster's: keys under /aup/NAME/
  std::string node;               // this node's
  std::string advertise;          // where the others reach it (the line protocol)
  int lease_ttl_seconds = 5;
  uint32_t sync_replicas = 0;
};

// `etcd://HOST:PORT[,HOST:PORT...]/NAME`; false with why not.
bool parse_cluster_address(std::string_view url, std::vector<std::string>& endpoints, std::string& name,
                           std::string& error);

// The keys of cluster `name` (docs/replication.md lists them).
std::string cluster_prefix(std::string_view name);

class Cluster {
 public:
  static constexpr int kTickMs = 100;
  // With --sync-replicas 0, a node that has not caught up with the primary
  // it follows takes over only once the cluster has had no primary for
  // this many lease TTLs (eligible()).
  static constexpr int kLaggardWaitTtls = 3;

  // Starts the threads at once. `store`, `tasks`, `durability` and
  // `shipper` are the server's and must outlive this; `restart` asks the
  // process to stop serving and start again.
  Cluster(ClusterOptions o, storage::Store& store, storage::Io& io, OwnerTasks& tasks, StoreDurability& durability,
          Shipper& shipper, std::FILE* err, std::function<void()> restart);
  ~Cluster();  // stops the threads; revokes the lease (a new election at once)
  Cluster(const Cluster&) = delete;
  Cluster& operator=(const Cluster&) = delete;

  // Any thread: a primary whose lease is surely still held.
  bool may_answer() const;
  bool restarting() const { return restarting_.load(std::memory_order_acquire); }

  enum class Role : uint8_t { Joining, Replica, Primary };
  Role role() const { return role_.load(std::memory_order_acquire); }
  uint32_t term() const { return term_.load(std::memory_order_acquire); }
  // Any thread: the replication_* gauges of this node.
  ReplicationFigures figures() const;

 private:
  struct Leader {
    std::string node, advertise;
    int64_t rev = 0;
  };
  void control();
  void keep_alive();
  void campaign();
  bool join(EtcdClient& c);
  void tick(EtcdClient& c);
  void tick_replica(EtcdClient& c);
  void tick_primary(EtcdClient& c);
  bool eligible(EtcdClient& c);
  bool caught_up_or_waited();
  void follow(const Leader& l);
  void no_primary();
  void drop_follower();
  void take_over(EtcdClient& c, const EtcdLeader& won);
  bool begin_leading(const EtcdLeader& won, std::string& why);
  bool write_sync_set(EtcdClient& c, const std::vector<std::string>& replicas);
  void keep_sync_set(EtcdClient& c);
  void step_down(const std::string& why);
  bool on_owner(std::function<void()> task);
  void say(const std::string& line);
  bool wait_ms(int ms);  // false once stopping

  ClusterOptions o_;
  std::string prefix_, election_, value_;
  storage::Store& store_;
  storage::Io& io_;
  OwnerTasks& tasks_;
  StoreDurability& durability_;
  Shipper& shipper_;
  std::FILE* err_;
  std::function<void()> restart_;

  std::atomic<Role> role_{Role::Joining};
  std::atomic<uint32_t> term_{0};
  std::atomic<bool> restarting_{false}, lease_lost_{false}, cancel_campaign_{false};
  std::atomic<int64_t> lease_{0};
  std::atomic<int64_t> granted_ttl_ms_{0};
  // Until when (steady clock, ns since its epoch) the lease surely holds.
  std::atomic<int64_t> valid_until_ns_{0};

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                    // under mu_
  bool campaigning_ = false;             // under mu_: the campaign thread runs
  std::optional<EtcdLeader> won_;        // under mu_: the campaign's win, for the control loop
  EtcdLeader leading_;                   // the control thread's: the key this node leads with
  mutable std::mutex follower_mu_;       // held to replace follower_, and to read it from another thread
  std::unique_ptr<Follower> follower_;   // the control thread's
  std::string following_;                // its primary's address
  bool said_no_primary_ = false;
  int64_t no_primary_since_ns_ = 0;      // the control thread's: the leader key seen gone since (0: one leads)
  bool said_laggard_ = false;            // the control thread's: caught_up_or_waited() said why it waits
  std::vector<std::string> counted_;     // the synchronous replicas counted now (primary)
  std::atomic<uint64_t> floor_{0};       // the last save when this node began leading (figures() reads it anywhere)
  std::thread control_, keepalive_, campaign_;
};

}  // namespace aup::runtime
