// The TPC-C case: aup-tpcc (bench/tpcc) against the aup backend, the
// server started with each side's --engine. One W-warehouse store is
// loaded once into a scratch directory (by default in /dev/shm); every
// run starts from a fresh copy of it, so both sides apply the same
// transactions to the same population, and aup-tpcc reads the server's
// CPU from /proc over the timed phase and checks consistency after it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/jit/cases.h"
#include "bench/jit/options.h"

namespace aup::bench::jit {

struct TpccRun {
  double seconds = 0;               // the timed phase
  uint64_t transactions = 0;
  double transactions_per_s = 0;
  double cpu_us_per_transaction = 0;  // the server process, every thread
  std::string json;                 // aup-tpcc run --json, as written
};

struct TpccResult {
  double load_s = 0;  // loading the template (aup's default engine)
  std::array<std::vector<TpccRun>, 2> runs;  // per side, one per repetition
  // `aup run tpcc.aup --memory --stats` on no input, per side, one per
  // repetition: start-up, and the JIT's compile time of the module.
  std::array<std::vector<Run>, 2> startups;
};

// The module's start-up on each side, then the load, then o.reps
// repetitions of one run per side, the sides' order alternating. Throws
// std::runtime_error when aup-tpcc fails or a run is not consistent
// afterwards.
TpccResult measure_tpcc(const Options& o);

}  // namespace aup::bench::jit
