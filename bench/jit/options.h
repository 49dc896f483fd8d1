// What jit_bench is told: the programs and modules under test, the two
// sides compared (an engine each), which cases run and how big they are.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/common/program.h"

namespace aup::bench::jit {

// One side of the comparison: `aup run ... --engine ENGINE`, or with no
// --engine at all (engine ""), so that aup's own default applies.
struct Side {
  std::string engine;
  std::string label() const { return engine.empty() ? "default" : engine; }
  std::vector<std::string> args() const {
    return engine.empty() ? std::vector<std::string>{} : std::vector<std::string>{"--engine", engine};
  }
};

// Sides[0] is the reference (the VM), sides[1] the one measured against it
// (the JIT): every ratio is sides[1] ÷ sides[0].
using Sides = std::array<Side, 2>;

struct Options : RunOptions {
  std::string aup;      // the aup executable
  std::string tpcc;     // the aup-tpcc executable (the TPC-C case)
  std::string tpcc_gen; // the aup-tpcc-gen executable (the tpcc-pipe case; main: by default beside `tpcc`)
  std::string compute;  // bench/jit/compute.aup
  std::string tables;   // bench/jit/tables.aup
  std::string tpcc_module;  // examples/tpcc/tpcc.aup
  Sides sides{Side{"vm"}, Side{"jit"}};
  bool quick = false;         // a few seconds: tiny inputs, one repetition, answers checked
  bool run_compute = true, run_tables = true, run_tpcc_pipe = true, run_tpcc = true;

  // compute.aup: `compute_events` crunch events of `rounds` loop rounds each.
  uint64_t compute_events = 200;
  uint64_t rounds = 20'000;
  // tables.aup: `items` rows, then `touches` touch events, each looping
  // over a view of `width` rows.
  uint64_t items = 10'000;
  uint64_t touches = 200'000;
  uint64_t width = 8;
  // TPC-C on the owner path (tpcc-pipe): aup-tpcc-gen's load of
  // `warehouses`, then `pipe_transactions` transactions interleaved as
  // `terminals` terminals take turns, on `aup run`'s stdin.
  uint64_t pipe_transactions = 200'000;
  // TPC-C through aup-tpcc: a fresh copy of a loaded store per run.
  int64_t warehouses = 1;
  uint32_t terminals = 16;
  double seconds = 8;
  double warmup = 1;
  std::string tpcc_dir = "/dev/shm";  // where the stores go (a scratch directory inside)
  std::string tpcc_cpus = "auto";     // aup-tpcc --cpus
};

}  // namespace aup::bench::jit
