// Every run of the benchmark: in each repetition the bare fdatasync rates
// first (the CPU idle, then kept busy), then for each client count every system in a rotating order (so a
// drift of the shared machine falls on all of them alike). A run is one
// fresh server in a fresh directory: start, fund the accounts, the load,
// the check of its totals against the clients' count, stop.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/peers/disk.h"
#include "bench/peers/options.h"

namespace aup::bench::peers {

struct Sample {
  std::string system;
  uint32_t clients = 0;
  uint32_t rep = 0;
  double seconds = 0;      // the timed phase, as measured
  uint64_t transfers = 0;  // made in it
  double transfers_per_s = 0;
  double p50_us = 0, p99_us = 0, max_us = 0;
  double server_user_us = 0, server_system_us = 0;  // per transfer, every server thread
  double client_cpu_us = 0;                         // this program's, per transfer
  double process_bytes = 0;                         // /proc/PID/io write_bytes per transfer
  double device_bytes = -1;                         // the block device's per transfer; -1: none found
  uint64_t transfers_total = 0;                     // warm-up and the last ones too: what the totals were checked against
  // A replicated system's (aup-k0, aup-k1): its replica's CPU per transfer,
  // and its lag while the load ran (saves behind; seconds behind).
  double replica_cpu_us = -1;
  double lag_p50_entries = -1, lag_max_entries = -1, lag_max_ms = -1;
  double server_cpu_us() const { return server_user_us + server_system_us; }
};

struct Sweep {
  std::vector<Sample> samples;
  std::vector<SyncRate> syncs;       // one per repetition, the CPU idle between syncs
  std::vector<SyncRate> busy_syncs;  // one per repetition, the CPU kept busy
  std::string device;           // "vda"; empty: none found
};

// Runs everything. Throws std::runtime_error when a server misbehaves: a
// refused transfer, totals that disagree, a crash, a hang, an unclean exit.
Sweep run_all(const Options& o);

}  // namespace aup::bench::peers
