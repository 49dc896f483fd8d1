#include "bench/retention/report.h"

#include <doctest/doctest.h>

#include <string>

namespace aup::retention {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Two repetitions of every policy on the first condition, with borrow's
// time and memory a known multiple of copy's in each.
BenchResults synthetic() {
  BenchResults r;
  r.options.records = 4;
  r.options.repetitions = 2;
  r.options.baseline = Policy::copy;
  r.options.command_line = "retention bench";
  r.environment.generated_utc = "2026-01-01T00:00:00Z";
  for (Shape s : {Shape::small_selection, Shape::large_selection, Shape::mixed}) {
    FixtureRecord f;
    f.shape = s;
    f.info.output_hash = 0xabc;
    f.info.records = 4;
    r.fixtures.push_back(f);
  }
  for (uint32_t rep = 1; rep <= 2; ++rep) {
    for (Policy p : kAllPolicies) {
      MeasuredRun run;
      run.condition = 0;
      run.repetition = rep;
      run.output_hash = 0xabc;
      run.stats.policy = std::string(policy_name(p));
      bool borrow = p == Policy::borrow;
      run.stats.elapsed_ns = (borrow ? 3 : 1) * 1'000'000 * rep;
      run.stats.latency_p99_ns = 1'000'000;
      run.stats.peak_managed_bytes = (borrow ? 30 : 1) << 20;
      run.stats.vm_hwm_kib = borrow ? 4096 : 2048;
      run.stats.bytes_copied = borrow ? 0 : 1u << 20;
      r.runs.push_back(run);
    }
  }
  return r;
}

TEST_SUITE("report") {
  TEST_CASE("median and spread") {
    CHECK(median({3, 1, 2}) == 2);
    CHECK(median({4, 1, 3, 2}) == 2.5);
    CHECK(median({}) == 0);
    Spread s = spread({5, 1, 9});
    CHECK(s.median == 5);
    CHECK(s.min == 1);
    CHECK(s.max == 9);
  }

  TEST_CASE("ratios are taken against the baseline of the same repetition") {
    auto summary = summarize(synthetic());
    REQUIRE(summary.size() == kSeedConditions.size());
    const ConditionSummary& c = summary[0];
    CHECK(c.outputs_equal);
    REQUIRE(c.policies.size() == kAllPolicies.size());
    const PolicySummary& borrow = c.policies[0];
    CHECK(borrow.policy == Policy::borrow);
    CHECK(borrow.runs == 2);
    CHECK(borrow.ratio_finish == doctest::Approx(3.0));
    CHECK(borrow.ratio_peak_managed == doctest::Approx(30.0));
    CHECK(borrow.ratio_vm_hwm == doctest::Approx(2.0));
    CHECK(borrow.finish_ms.min == doctest::Approx(3.0));
    CHECK(borrow.finish_ms.max == doctest::Approx(6.0));
    CHECK(c.policies[1].ratio_finish == doctest::Approx(1.0));
    CHECK(c.policies[1].copied_mib == doctest::Approx(1.0));
    // A condition without runs reports no equality it did not see.
    CHECK_FALSE(summary[1].outputs_equal);
  }

  TEST_CASE("a differing output hash is reported") {
    auto r = synthetic();
    r.runs[3].output_hash = 0xdef;
    CHECK_FALSE(summarize(r)[0].outputs_equal);
    CHECK(contains(render_markdown(r, summarize(r)), "OUTPUTS DIFFER"));
  }

  TEST_CASE("the markdown names the command and has a row per policy") {
    auto r = synthetic();
    std::string md = render_markdown(r, summarize(r));
    CHECK(contains(md, "`retention bench`"));
    CHECK(contains(md, "## small-q512"));
    CHECK(contains(md, "| borrow | 30.000 |"));
    for (Policy p : kAllPolicies) CHECK(contains(md, "| " + std::string(policy_name(p)) + " |"));
  }

  TEST_CASE("the JSON carries the command, the fixtures and every run") {
    auto r = synthetic();
    std::string json = render_json(r, summarize(r));
    CHECK(contains(json, R"("command": "retention bench")"));
    CHECK(contains(json, R"("expected_output_hash": "0000000000000abc")"));
    CHECK(contains(json, R"("ratio_to_baseline": {"finish": 3.0000)"));
    size_t runs = 0;
    for (size_t at = json.find("\"repetition\":"); at != std::string::npos;
         at = json.find("\"repetition\":", at + 1)) {
      ++runs;
    }
    CHECK(runs == r.runs.size());
  }

  TEST_CASE("json_quote escapes quotes, backslashes and control bytes") {
    CHECK(json_quote("a\"b\\c\nd\x01") == R"("a\"b\\c\nd\u0001")");
  }
}

}  // namespace
}  // namespace aup::retention
