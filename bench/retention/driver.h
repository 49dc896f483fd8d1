// The bench driver: generates the seeded fixtures, then for each condition
// runs every policy once to warm up and `repetitions` more times in a
// shuffled order, each run in its own process (this program's `run`
// command) so that VmHWM belongs to that run alone. After every run it
// checks the output's hash against the fixture's expected output, that every
// input byte was read and that every buffer was reclaimed; a run that fails
// a check stops the bench and nothing is reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/retention/conditions.h"
#include "bench/retention/fixture.h"
#include "bench/retention/instrumentation.h"
#include "bench/retention/policy.h"
#include "bench/retention/signals.h"
#include "bench/retention/status.h"

namespace aup::retention {

struct BenchOptions {
  bool quick = false;
  uint32_t records = kSeedRecords;
  uint32_t repetitions = 5;
  uint64_t seed = kSeedRecordSeed;
  Policy baseline = Policy::copy;
  int cpu = -1;          // pin the driver and its runs to this CPU; -1: do not pin
  std::string self_exe;  // run for each measurement
  std::string work_dir;  // fixtures and outputs; a fresh one under $TMPDIR when empty
  bool keep_work = false;
  std::string command_line;  // recorded with the results
};

// Caps what a typo can ask for; a full run is 5.
inline constexpr uint32_t kMaxRepetitions = 100;

struct FixtureRecord {
  Shape shape = Shape::small_selection;
  FixtureSpec spec;
  FixtureInfo info;
};

struct MeasuredRun {
  uint32_t condition = 0;   // index into kSeedConditions
  uint32_t repetition = 0;  // from 1
  uint32_t position = 0;    // place in the shuffled order, from 1
  uint64_t output_hash = 0;
  RunStats stats;
};

struct Environment {
  std::string cpu_model;
  std::string kernel;
  std::string compiler;
  std::string build;
  uint32_t online_cpus = 0;
  uint64_t timer_slack_ns = 0;
  std::string generated_utc;
};

struct BenchResults {
  BenchOptions options;
  Environment environment;
  std::vector<FixtureRecord> fixtures;
  std::vector<MeasuredRun> runs;  // warm-up runs are checked but not kept
};

Environment describe_environment();

// The repetition's policy order: a Fisher-Yates shuffle from the seed, so
// a rerun with the same seed runs the same order.
std::vector<Policy> shuffled_policies(uint64_t seed, uint32_t condition, uint32_t repetition);

Result<BenchResults> run_bench(const BenchOptions& options, SignalWatch& signals);

}  // namespace aup::retention
