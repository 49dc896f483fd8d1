// One measured run, as `aup-tpcc run` and every cell of the matrix make it:
// open the loaded backend (pinned as the CPU plan says), run the terminals,
// check consistency, read counts and memory, close. And the run's figures
// as a JSON object and as text for the terminal.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "bench/tpcc/backend.h"
#include "bench/common/cpus.h"
#include "bench/tpcc/driver.h"

namespace aup::tpcc {

struct Measured {
  RunResult result;
  std::vector<std::string> problems;  // consistency after the run; empty when it holds
  TableCounts counts;                 // after the run
  uint64_t state_bytes = 0;           // state_bytes(counts)
  uint64_t resident_bytes = 0;        // the working process after the run
};

// Opens a backend on config.dir (already loaded), runs `spec`, checks
// consistency for every warehouse, closes it. With a CPU plan: the server
// process on plan.server and this thread (so the terminals) on plan.client
// for aup; this whole process on plan.server for SQLite, whose work is in
// it. Throws when the backend fails; consistency problems are returned.
Measured measure(BackendConfig config, const RunSpec& spec, const std::optional<bench::CpuPlan>& cpus,
                 const std::function<void(const std::string&)>& progress);

// The figures of one run as one JSON object (no newline), with `labels`
// (already JSON members, "\"backend\":\"aup\",...") first.
std::string measured_json(const Measured& m, const std::string& labels);

// A few lines for a person: rate, New-Orders/min, latency per type, CPU,
// bytes, memory, consistency.
std::string measured_text(const Measured& m);

}  // namespace aup::tpcc
