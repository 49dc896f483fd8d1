// What aup-tpcc asks of a system under test: load the initial population,
// run transactions from terminals, check consistency, and give up its
// rows, its counts and its process figures. `aup_backend.h` (aup run
// --listen over a Unix socket) and `sqlite_backend.h` (libsqlite3 in this
// process, three configurations) implement it; the driver, same-state and
// the matrix only ever see this interface, so every backend is measured and
// checked by the same code.
//
// Errors: a backend that cannot do what it is asked (a server that died, an
// answer that is neither ok nor the expected rollback, an SQL error) throws
// std::runtime_error with a sentence that names the backend; aup-tpcc
// prints it and exits 1. A run with such an error is never reported.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "bench/common/block_device.h"
#include "bench/tpcc/generator.h"
#include "bench/tpcc/state.h"

namespace aup::tpcc {

// How one transaction ended.
enum class Outcome : uint8_t {
  committed,    // done (read-only ones too); durable when the backend is
  rolled_back,  // the 1% New-Order with an unused item: nothing of it persists
};

// What a transaction returned, as numbers, so same-state can compare every
// answer of two backends as well as their final rows. Money in cents,
// "no carrier"/"not delivered" as 0, booleans as 0/1:
//   new_order    {order number, line count, total, brands}  (total =
//                round(sum(amount) * (10000 - discount) * (10000 + w_tax + d_tax) / 1e8),
//                std::round, as tpcc.aup's `round`; brands: brand_mask of the
//                lines' "B"/"G"); empty when rolled back
//   payment      {customer number (the one found when chosen by name),
//                balance after, credit (0 "GC", 1 "BC")}
//   order_status {customer number, balance, order number, carrier, then for
//                each line in line-number order: item, supply, quantity,
//                amount, delivered (0/1)}
//   delivery     {for each district 1..10, the order delivered (0 when none
//                waited)}
//   stock_level  {low stock count}
// The brand-generic letters of a New-Order's lines ("BGG...", clause
// 2.4.2.2) as a number: bit n - 1 is set when line n is "B".
inline int64_t brand_mask(std::string_view brands) {
  int64_t mask = 0;
  for (size_t i = 0; i < brands.size(); ++i) {
    if (brands[i] == 'B') mask |= int64_t{1} << i;
  }
  return mask;
}

struct TxResult {
  Outcome outcome = Outcome::committed;
  std::vector<int64_t> values;
};

// One terminal: used by one thread at a time. Its connection is its own,
// or for aup with BackendConfig::connections one that other terminals'
// requests share (each terminal still waits for its own answer).
class Terminal {
 public:
  virtual ~Terminal() = default;
  // Runs one transaction to its end and returns when its answer is final
  // (for a durable backend: committed to the device). A New-Order whose
  // rollback flag is set must come back rolled_back, any other must come back
  // committed; anything else throws.
  virtual TxResult execute(const Transaction& tx) = 0;
};

// Figures of the process that does the work (the aup server, or this process
// for SQLite), read from /proc at one moment; the driver subtracts two.
struct ProcessFigures {
  // CPU time of every thread, kept apart: user (utime) is the work itself,
  // system (stime) what the kernel did for it (sockets, wake-ups, writes),
  // which is what a client's way of connecting changes most.
  double user_ns = 0;
  double system_ns = 0;
  double cpu_ns() const { return user_ns + system_ns; }
  uint64_t write_bytes = 0;    // /proc/PID/io write_bytes: sent to the block device
  uint64_t resident_bytes = 0; // VmRSS
  // Sectors written × 512 by the block device holding the data (every
  // process's writes, the file system's journal and metadata included);
  // -1 when the data is not on a block device.
  double device_bytes = -1;
};

// Reads ProcessFigures of `pid` (0: this process) and of `device`. Throws
// when /proc cannot be read.
ProcessFigures process_figures(pid_t pid, const bench::BlockDevice& device);

// Where and how a backend keeps its data.
struct BackendConfig {
  std::string kind;       // "aup", "sqlite", "sqlite-tuned", "sqlite-grouped"
  std::string dir;        // the data directory (made when missing); the backend's files live inside
  int64_t warehouses = 1; // of the population that is (or will be) loaded
  uint32_t terminals = 1; // how many terminal() calls will follow
  bool on_disk = false;   // the directory is on a block device (sqlite-tuned: 1 KiB pages)
  // aup only: the aup executable and the module, and the server's
  // --io-threads; a CPU list for `taskset -c` ("" for none); the server's
  // `--engine` ("" passes none, so aup's own default applies).
  std::string aup;
  std::string module;
  uint32_t io_threads = 2;
  std::string server_cpus;
  std::string engine;
  // aup only: the terminals share this many pipelined connections,
  // terminal i using connection i % connections, many requests in flight
  // on each (aup_pipeline.h); 0, or as many as terminals: a connection of
  // its own per terminal. SQLite runs in this process and takes only 0.
  uint32_t connections = 0;
};

// Throws std::invalid_argument with a sentence when `config.connections`
// is not one that config.kind takes (aup: 0 or 1..terminals; SQLite: 0).
void check_connections(const BackendConfig& config);

// The connections to the aup server that `terminals` terminals use with
// BackendConfig::connections `connections`: that, or one per terminal when
// it is 0; 0 for a SQLite kind, which has none (it runs in this process).
uint32_t server_connections(const std::string& kind, uint32_t terminals, uint32_t connections);

class Backend {
 public:
  virtual ~Backend() = default;

  // The kind, as in BackendConfig ("sqlite-tuned"), for messages and reports.
  virtual std::string name() const = 0;

  // Loads the initial population into an empty store; `progress` gets the
  // rows loaded so far now and then (for a progress line).
  virtual void load(const LoadConfig& config, const std::function<void(uint64_t rows)>& progress) = 0;

  // A new terminal, numbered 0..terminals-1. Each is used by its own thread.
  virtual std::unique_ptr<Terminal> terminal(uint32_t index) = 0;

  // Clause 3.3.2.1 to 3.3.2.4 for warehouses 1..warehouses: each problem as
  // a sentence naming the warehouse and district; empty when they hold.
  virtual std::vector<std::string> consistency(int64_t warehouses) = 0;

  // The rows of each table (for same-state); only once every terminal is gone.
  virtual State dump() = 0;

  // Rows per table, cheap enough to call after every timed run.
  virtual TableCounts counts() = 0;

  // The working process's figures now.
  virtual ProcessFigures figures() = 0;

  // Ends cleanly (the aup server: SIGTERM, exit status 0; SQLite: connections
  // closed, WAL checkpointed). Throws when it does not end cleanly. The
  // destructor of a backend not closed abandons it (kills the server).
  virtual void close() = 0;
};

// Makes the backend that config.kind names; throws for an unknown kind or
// (check_connections) connections it does not take.
std::unique_ptr<Backend> make_backend(const BackendConfig& config);

// The kinds make_backend accepts, in report order.
const std::vector<std::string>& backend_kinds();

}  // namespace aup::tpcc
