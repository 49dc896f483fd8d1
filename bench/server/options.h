// What the server benchmark is told: where aup and the bank module are,
// which stores to compare with the in-memory baseline, and the shape of
// the load. main.cpp fills it from the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/common/cpus.h"
#include "bench/common/program.h"

namespace aup::bench::server {

// A durable store's place: each run gets a fresh directory inside `dir`,
// removed after the run.
struct StoreDir {
  std::string label;  // "shm", "disk": names the rows of the report
  std::string dir;
};

struct Options : RunOptions {
  Options() { reps = 3; }
  std::string aup;                         // the aup executable
  std::string bank;                        // examples/bank/bank.aup
  std::vector<StoreDir> stores;            // durable stores, each against --memory
  std::vector<uint32_t> connections{1, 16, 64};
  double seconds = 5;                      // the timed phase of one run
  double warmup = 1;                       // load before the timed phase
  uint32_t accounts = 10000;               // opened and funded before the load
  uint32_t window = 64;                    // requests outstanding per connection
  uint32_t io_threads = 2;                 // the server's --io-threads (0: the owner serves)
  // How the load reaches the server: "unix" (the line protocol on a Unix
  // socket), "tcp" (on loopback TCP), "http" (HTTP on loopback TCP); each
  // store is run over each, in the same rotation. Rows of another
  // transport than unix are labelled "STORE TRANSPORT" ("memory http").
  std::vector<std::string> transports{"unix"};
  // --cpus CLIENT:SERVER: this process (its client threads) on CLIENT, the
  // server under `taskset -c SERVER`; none (the default) leaves both to the
  // scheduler, as a server with I/O threads wants more than one CPU.
  std::optional<CpuPlan> cpus;
  std::string name = "server";             // results go to bench/results/NAME.{json,md}
};

}  // namespace aup::bench::server
