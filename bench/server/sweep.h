// Every run of the benchmark: for each repetition and connection count,
// the in-memory server and each durable store in a rotating order (so a
// drift of the shared machine falls on all of them alike). A run is one
// fresh server: start, open and fund the accounts, the load, the final
// check of the bank's totals, SIGTERM.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/server/options.h"
#include "bench/server/server_process.h"

namespace aup::bench::server {

// The store label of the baseline, `aup run --memory`.
inline constexpr const char* kMemory = "memory";

struct Sample {
  std::string store;  // kMemory or a StoreDir label
  uint32_t connections = 0;
  uint32_t rep = 0;
  double seconds = 0;  // the timed phase, as measured
  uint64_t events = 0;  // answered in it
  double events_per_s = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  double server_cpu_us_per_event = 0;  // user + system, every server thread
  double server_user_us_per_event = 0;
  double server_system_us_per_event = 0;
  double client_cpu_us_per_event = 0;  // this program, for the shared-cores caveat
  uint64_t transfers_ok = 0;           // every ok transfer, warm-up and drain too
  std::vector<StatsLine> stats;        // --stats lines whose second lies in the timed phase
};

// The store labels in report order: kMemory first, then o.stores.
std::vector<std::string> store_labels(const Options& o);

// Runs everything; `work_dir` holds the sockets. Throws std::runtime_error
// when a server misbehaves: a failed answer, a wrong total, a crash, a
// hang, a non-zero exit.
std::vector<Sample> run_all(const Options& o, const std::string& work_dir);

}  // namespace aup::bench::server
