// The event cases, compute.aup and tables.aup: their inputs, generated
// from a seed, and their runs through `aup run MODULE --memory --stats`
// with each side's engine. Every timed run has a baseline run beside it:
// the same number of events of the module's `noop` (the same arguments,
// no work), so that reading requests, dispatch, answers and start-up
// (compiling the module, and the JIT's compilation) fall out of the
// difference. tpcc-pipe (tpcc_pipe.h) is measured the same way, with the
// load alone as its baseline.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/jit/options.h"
#include "bench/jit/process.h"

namespace aup::bench::jit {

struct EventCase {
  std::string name;      // "compute", "tables", "tpcc-pipe"
  std::string module;    // the .aup file
  std::vector<std::string> flags;  // more `aup run` flags, the same on both sides
  std::string work;      // the input file: setup, then the measured events
  std::string baseline;  // the same setup, then as many noop events (or none)
  uint64_t events = 0;   // measured events per input
  uint64_t requests = 0; // lines of `work`, setup included
  // An error message that answers may carry because the input asks for it
  // (TPC-C's New-Order rollbacks); "": every answer must be ok.
  std::string expected_error;
  std::string shape;     // what the input is, for the report
};

// One run of aup: its CPU time (wait4) and the JIT's `--stats` line.
struct Run {
  Usage usage;
  std::string jit_stats;  // the JSON object of `aup: jit {...}`; "" when aup printed none
};

struct EventResult {
  EventCase c;
  std::array<std::vector<Run>, 2> work;  // per side, one per repetition
  std::array<std::vector<Run>, 2> base;
  uint64_t ok = 0;      // ok answers of the checked run (the same on both sides)
  uint64_t failed = 0;  // its answers with c.expected_error
};

// The object after "aup: jit " on a line of `stderr_text` (what `--stats`
// makes the JIT print); "" when there is none.
std::string jit_stats(const std::string& stderr_text);

// `aup run MODULE --memory --stats` with the side's engine on no input:
// start-up alone (compiling the module, and with the JIT its native code).
// `errors` is a scratch file for its stderr.
Run startup_run(const Options& o, const std::string& module, const Side& side, const std::string& errors);

// Writes the inputs into `dir`; throws std::runtime_error when it cannot.
EventCase make_compute(const std::string& dir, const Options& o);
EventCase make_tables(const std::string& dir, const Options& o);

// One checked run of each side (every request answered, ok or with
// c.expected_error, and both sides' answers identical, byte for byte), then
// o.reps repetitions of the four runs (each side's work and baseline) in a
// rotating order. Throws std::runtime_error on a wrong answer or a failed
// run.
EventResult measure_events(const Options& o, const EventCase& c);

}  // namespace aup::bench::jit
