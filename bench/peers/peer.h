// What the benchmark asks of each system under test: a server started
// fresh for one run, funded with the accounts, clients ("tellers") that
// make one durable transfer at a time, and the totals it keeps, which are
// checked against what the tellers were told.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/peers/child.h"

namespace aup::bench::peers {

// One client's connection (or its share of one).
class Teller {
 public:
  virtual ~Teller() = default;
  // Moves `amount` from account `from` to `to` and returns once the server
  // answered, which it does only when the transfer is durable: true when
  // it was made; false, with the server's answer in `why`, when refused.
  // Throws std::runtime_error when the connection fails.
  virtual bool transfer(uint32_t from, uint32_t to, uint32_t amount, std::string& why) = 0;
};

// What the server holds after a run.
struct Totals {
  double transfers = 0;  // the transfers it counted as made
  double sum = 0;        // of every balance: transfers move money, so it stays what was deposited
  double accounts = 0;
};

// What a replica said of itself while the load ran (its stats, a sample
// each 100 ms): saves behind its primary, and for how long.
struct LagSample {
  double entries = 0;
  double seconds = 0;
};

class Peer {
 public:
  virtual ~Peer() = default;
  virtual const Child& process() const = 0;
  // A replicated system's replica, measured beside its primary; or null.
  virtual const Child* replica() const { return nullptr; }
  // Its lag while the tellers ran (a replicated system's).
  virtual std::vector<LagSample> lag() { return {}; }
  // Creates accounts 1..accounts holding `deposit` each (pipelined, before
  // any timing).
  virtual void fund(uint32_t accounts, uint64_t deposit) = 0;
  // `clients` tellers, one for each client thread.
  virtual std::vector<std::unique_ptr<Teller>> tellers(uint32_t clients) = 0;
  virtual Totals totals() = 0;
  // Ends the server; throws unless it exits cleanly.
  virtual void stop() = 0;
};

// Where and how one run's server starts.
struct PeerSetup {
  std::string dir;   // a fresh directory on the volume measured: data, socket, log
  std::string cpus;  // taskset -c list for the server; empty: not pinned
};

// The systems, as the report names them.
inline constexpr const char* kAup = "aup";
inline constexpr const char* kRedis = "redis";
inline constexpr const char* kTarantoolShared = "tarantool-shared";
inline constexpr const char* kTarantoolPerClient = "tarantool-per-client";
// Not a peer: the least a server of this shape costs here (floor_server.cpp).
inline constexpr const char* kFloor = "floor";
// aup with one replica (docs/replication.md), --sync-replicas 0 and 1:
// bench/replication, not peers but aup against itself alone.
inline constexpr const char* kAupSync0 = "aup-k0";
inline constexpr const char* kAupSync1 = "aup-k1";
inline bool replicated(const std::string& system) { return system == kAupSync0 || system == kAupSync1; }

struct AupConfig {
  std::string aup;         // the executable
  std::string bank;        // examples/bank/bank.aup
  int io_threads = -1; // --io-threads; -1: aup's default
};

std::unique_ptr<Peer> start_aup(const AupConfig& config, const PeerSetup& setup);
// A primary (pinned as `setup` says) with --sync-replicas `k`, and one
// replica following it (pinned to `replica_cpus`), in `setup.dir`. The
// tellers talk to the primary; totals() also checks the replica, once it
// has caught up, holds the same.
std::unique_ptr<Peer> start_aup_replicated(const AupConfig& config, uint32_t k, const std::string& replica_cpus,
                                           const PeerSetup& setup);
// `program`: peers_floor; it starts with the accounts funded.
std::unique_ptr<Peer> start_floor(const std::string& program, uint32_t accounts, uint64_t deposit,
                                  const PeerSetup& setup);
std::unique_ptr<Peer> start_redis(const std::string& redis_server, const PeerSetup& setup);
// `shared`: every teller calls through one connection; else one each.
std::unique_ptr<Peer> start_tarantool(const std::string& tarantool, bool shared, const PeerSetup& setup);

}  // namespace aup::bench::peers
