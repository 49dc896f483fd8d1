// The events benchmark's runs: each workload's commands timed in a
// rotating order per repetition (so drift on a shared machine falls on
// every command alike), after one checked run whose answers must match
// what the workload expects.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/common/measure.h"
#include "bench/common/program.h"
#include "bench/events/pipeline.h"
#include "bench/events/workload.h"

namespace aup::bench::events {

// out_dir gets events.json and events.md.
struct Options : RunOptions {
  std::string aup;     // the aup executable
  std::string bank;    // examples/bank/bank.aup
  std::string ledger;  // bench/events/ledger.aup
  BankShape bank_shape;
  LedgerShape ledger_shape;
  bool keep = false;  // keep the generated inputs (their directory is printed)
};

struct WorkloadResult {
  Workload w;
  std::vector<Timing> pipe;   // cat INPUT | cat > /dev/null
  std::vector<Timing> lines;  // cat INPUT | wc -l > /dev/null
  std::vector<Timing> aup;    // cat INPUT | aup run MODULE --memory > /dev/null
  uint64_t responses = 0;     // from the checked run
  uint64_t ok = 0, failed = 0;
};

struct StartupResult {
  std::string module;
  std::vector<Timing> runs;  // aup run MODULE --memory < /dev/null
};

struct Results {
  std::vector<WorkloadResult> workloads;
  std::vector<StartupResult> startups;
};

// Checks the answers of one run of each workload, then times them all.
// Throws std::runtime_error on a wrong answer or a failed process.
Results measure(const Options& o, const std::vector<Workload>& workloads);

}  // namespace aup::bench::events
