// The timed load: C clients, each on its own thread with its own teller,
// in a closed loop (a transfer, its answer, the next transfer) for a
// warm-up and then a timed phase, around which the server's counters are
// read. A transfer's latency runs from just before it is sent to the read
// that brought its answer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "bench/common/proc.h"
#include "bench/peers/disk.h"
#include "bench/peers/peer.h"

namespace aup::bench::peers {

struct LoadSpec {
  uint32_t clients = 1;
  uint32_t accounts = 2;  // transfers go between random distinct accounts 1..accounts
  uint32_t amount = 1;
  uint64_t seed = 0;
  double warmup_s = 2;
  double seconds = 10;
};

// What is read at each end of the timed phase.
struct Counters {
  double at_ns = 0;                // CLOCK_MONOTONIC
  ProcessCpu server_cpu;           // /proc/PID/stat
  ProcessCpu replica_cpu;          // a replicated system's replica's
  uint64_t server_write_bytes = 0; // /proc/PID/io
  std::optional<double> device_bytes;
  double client_cpu_ns = 0;        // this process
};

struct LoadResult {
  Counters before, after;
  uint64_t transfers = 0;  // answered ok within the timed phase
  double p50_us = 0, p99_us = 0, max_us = 0;
  uint64_t ok_total = 0;      // every transfer made: warm-up and the last ones too
  uint64_t failed_total = 0;  // every one refused
  std::string first_failure;
};

// Runs the load against `peer`; after the timed phase each client finishes
// its transfer in flight and stops. Throws std::runtime_error when a
// connection fails.
LoadResult run_load(const LoadSpec& spec, Peer& peer, const BlockDevice& device);

}  // namespace aup::bench::peers
