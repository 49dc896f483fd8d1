// jit_bench's results: JSON (every run) and a Markdown summary, which
// main.cpp publishes as jit.json and jit.md (common/report.h). Every ratio
// is sides[1] ÷ sides[0] (JIT ÷ VM), the median of the per-repetition
// ratios; speedup is the median of sides[0] ÷ sides[1].
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/jit/cases.h"
#include "bench/common/report.h"
#include "bench/jit/options.h"
#include "bench/jit/tpcc_case.h"

namespace aup::bench::jit {

struct Results {
  std::vector<EventResult> events;  // compute, tables (those that ran)
  std::optional<EventResult> tpcc_pipe;  // its baseline is the load alone
  std::optional<TpccResult> tpcc;
};

std::string to_json(const Environment& env, const Options& o, const Results& r);
std::string to_markdown(const Environment& env, const Options& o, const Results& r);

// The quick run's check: every figure a positive finite number (never how
// big): CPU per event of each side, of the piped load, and per transaction.
bool sane(const Results& r);

// The milliseconds a `aup: jit {...}` object reports: its "compile_ms", or
// else its first member whose name ends in "_ms"; nothing when it has
// neither.
std::optional<double> stats_ms(const std::string& object);

}  // namespace aup::bench::jit
