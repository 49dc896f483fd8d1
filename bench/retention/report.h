// From measured runs to what a reader sees: medians and ranges per policy,
// ratios against a baseline policy measured in the same repetition (the
// machines are shared and noisy, so a ratio of neighbours means more than a
// lone time), then bench/results/<stem>.json and <stem>.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "bench/retention/driver.h"
#include "bench/retention/policy.h"
#include "bench/retention/status.h"

namespace aup::retention {

struct Spread {
  double median = 0;
  double min = 0;
  double max = 0;
};

// The middle value (the mean of the two middle ones for an even count).
double median(std::vector<double> values);
Spread spread(std::vector<double> values);

struct PolicySummary {
  Policy policy = Policy::copy;
  uint32_t runs = 0;
  Spread finish_ms;
  Spread p99_ms;
  Spread peak_managed_mib;
  Spread peak_live_mib;
  Spread vm_hwm_mib;
  double rusage_maxrss_mib = 0;  // medians from here on
  double copied_mib = 0;
  double copies = 0;
  double allocation_calls = 0;
  double reuses = 0;
  double evictions = 0;
  double peak_queue_depth = 0;
  double space_waits = 0;
  double sleeps = 0;
  // Median over repetitions of this policy's value / the baseline's value in
  // the same repetition.
  double ratio_finish = 0;
  double ratio_p99 = 0;
  double ratio_peak_managed = 0;
  double ratio_vm_hwm = 0;
};

struct ConditionSummary {
  uint32_t condition = 0;
  bool outputs_equal = false;           // every run's output hash is the expected one
  std::vector<PolicySummary> policies;  // in kAllPolicies order
};

std::vector<ConditionSummary> summarize(const BenchResults& results);
std::string render_json(const BenchResults& results, const std::vector<ConditionSummary>& summary);
std::string render_markdown(const BenchResults& results, const std::vector<ConditionSummary>& summary);

// Writes <out_dir>/<stem>.json and <stem>.md (via a temporary file each, so
// a failed write leaves the previous results whole).
Status write_reports(const BenchResults& results, const std::string& out_dir, std::string_view stem);

// A JSON string literal for arbitrary bytes.
std::string json_quote(std::string_view s);

}  // namespace aup::retention
