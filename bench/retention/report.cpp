#include "bench/retention/report.h"

#include <algorithm>
#include <cassert>
#include <filesystem>

#include "bench/retention/hash.h"
#include "bench/retention/io.h"

namespace aup::retention {
namespace {

constexpr double kMiBd = 1024.0 * 1024.0;

double mib(uint64_t bytes) { return static_cast<double>(bytes) / kMiBd; }
double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }

const FixtureInfo& fixture_info(const BenchResults& r, Shape shape) {
  for (const FixtureRecord& f : r.fixtures) {
    if (f.shape == shape) return f.info;
  }
  assert(false && "a fixture for every shape");
  return r.fixtures.front().info;
}

double ratio(double value, double baseline) { return baseline > 0 ? value / baseline : 0; }

PolicySummary summarize_policy(const BenchResults& results, uint32_t condition, Policy policy) {
  std::vector<double> finish, p99, managed, live, hwm, maxrss, copied, copies, allocs, reuses, evictions,
      depth, waits, sleeps;
  std::vector<double> r_finish, r_p99, r_managed, r_hwm;
  for (const MeasuredRun& run : results.runs) {
    if (run.condition != condition || run.stats.policy != policy_name(policy)) continue;
    const RunStats& s = run.stats;
    finish.push_back(ms(s.elapsed_ns));
    p99.push_back(ms(s.latency_p99_ns));
    managed.push_back(mib(s.peak_managed_bytes));
    live.push_back(mib(s.peak_live_bytes));
    hwm.push_back(static_cast<double>(s.vm_hwm_kib) / 1024.0);
    maxrss.push_back(static_cast<double>(s.rusage_maxrss_kib) / 1024.0);
    copied.push_back(mib(s.bytes_copied));
    copies.push_back(static_cast<double>(s.copies));
    allocs.push_back(static_cast<double>(s.allocation_calls));
    reuses.push_back(static_cast<double>(s.reuses));
    evictions.push_back(static_cast<double>(s.evictions));
    depth.push_back(static_cast<double>(s.peak_queue_depth));
    waits.push_back(static_cast<double>(s.space_waits));
    sleeps.push_back(static_cast<double>(s.sleeps));
    for (const MeasuredRun& base : results.runs) {
      if (base.condition != condition || base.repetition != run.repetition ||
          base.stats.policy != policy_name(results.options.baseline)) {
        continue;
      }
      const RunStats& b = base.stats;
      r_finish.push_back(ratio(ms(s.elapsed_ns), ms(b.elapsed_ns)));
      r_p99.push_back(ratio(ms(s.latency_p99_ns), ms(b.latency_p99_ns)));
      r_managed.push_back(ratio(mib(s.peak_managed_bytes), mib(b.peak_managed_bytes)));
      r_hwm.push_back(ratio(static_cast<double>(s.vm_hwm_kib), static_cast<double>(b.vm_hwm_kib)));
    }
  }
  PolicySummary p;
  p.policy = policy;
  p.runs = static_cast<uint32_t>(finish.size());
  p.finish_ms = spread(finish);
  p.p99_ms = spread(p99);
  p.peak_managed_mib = spread(managed);
  p.peak_live_mib = spread(live);
  p.vm_hwm_mib = spread(hwm);
  p.rusage_maxrss_mib = median(maxrss);
  p.copied_mib = median(copied);
  p.copies = median(copies);
  p.allocation_calls = median(allocs);
  p.reuses = median(reuses);
  p.evictions = median(evictions);
  p.peak_queue_depth = median(depth);
  p.space_waits = median(waits);
  p.sleeps = median(sleeps);
  p.ratio_finish = median(r_finish);
  p.ratio_p99 = median(r_p99);
  p.ratio_peak_managed = median(r_managed);
  p.ratio_vm_hwm = median(r_hwm);
  return p;
}

std::string spread_json(const Spread& s) {
  return fmt::format(R"({{"median":{:.4f},"min":{:.4f},"max":{:.4f}}})", s.median, s.min, s.max);
}

std::string run_json(const MeasuredRun& run) {
  std::string out =
      fmt::format(R"({{"condition":{},"repetition":{},"position":{},"output_hash":"{}","policy":{})",
                  json_quote(kSeedConditions[run.condition].name), run.repetition, run.position,
                  hex64(run.output_hash), json_quote(run.stats.policy));
#define AUP_X(type, name) out += fmt::format(",\"" #name "\":{}", run.stats.name);
  AUP_RETENTION_STATS_FIELDS(AUP_X)
#undef AUP_X
  return out + "}";
}

// "12.3 (11.9-13.0)"
std::string spread_text(const Spread& s, int digits) {
  return fmt::format("{:.{}f} ({:.{}f}–{:.{}f})", s.median, digits, s.min, digits, s.max, digits);
}

Status write_file(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    auto file = File::open_write(tmp);
    if (!file.ok()) return file.take_error();
    auto bytes = std::as_bytes(std::span(text.data(), text.size()));
    if (Status s = write_all(file.value().fd(), bytes); !s.ok())
      return error("writing {}: {}", tmp, s.message());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return error("cannot rename {} to {}: {}", tmp, path, ec.message());
  return {};
}

}  // namespace

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

Spread spread(std::vector<double> values) {
  if (values.empty()) return {};
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  return Spread{median(values), *lo, *hi};
}

std::vector<ConditionSummary> summarize(const BenchResults& results) {
  std::vector<ConditionSummary> out;
  for (uint32_t ci = 0; ci < kSeedConditions.size(); ++ci) {
    ConditionSummary c;
    c.condition = ci;
    const FixtureInfo& fx = fixture_info(results, kSeedConditions[ci].shape);
    c.outputs_equal = true;
    bool any = false;
    for (const MeasuredRun& run : results.runs) {
      if (run.condition != ci) continue;
      any = true;
      c.outputs_equal = c.outputs_equal && run.output_hash == fx.output_hash;
    }
    c.outputs_equal = c.outputs_equal && any;
    for (Policy p : kAllPolicies) c.policies.push_back(summarize_policy(results, ci, p));
    out.push_back(std::move(c));
  }
  return out;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (ch == '\n') {
      out += "\\n";
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string render_json(const BenchResults& results, const std::vector<ConditionSummary>& summary) {
  const BenchOptions& o = results.options;
  const Environment& e = results.environment;
  std::string out = "{\n";
  out += "  \"benchmark\": \"retention\",\n";
  out += fmt::format("  \"command\": {},\n  \"generated_utc\": {},\n", json_quote(o.command_line),
                     json_quote(e.generated_utc));
  out += fmt::format(
      "  \"environment\": {{\"cpu_model\": {}, \"kernel\": {}, \"compiler\": {}, \"build\": {}, "
      "\"online_cpus\": {}, \"timer_slack_ns\": {}, \"pinned_cpu\": {}}},\n",
      json_quote(e.cpu_model), json_quote(e.kernel), json_quote(e.compiler), json_quote(e.build),
      e.online_cpus, e.timer_slack_ns, o.cpu);
  out += fmt::format(
      "  \"options\": {{\"quick\": {}, \"records\": {}, \"repetitions\": {}, \"warm_up_runs_per_policy\": 1, "
      "\"seed\": {}, \"baseline\": {}}},\n",
      o.quick, o.records, o.repetitions, o.seed, json_quote(policy_name(o.baseline)));
  out += "  \"fixtures\": [\n";
  for (size_t i = 0; i < results.fixtures.size(); ++i) {
    const FixtureRecord& f = results.fixtures[i];
    out += fmt::format(
        "    {{\"shape\": {}, \"records\": {}, \"seed\": {}, \"file_bytes\": {}, \"file_hash\": \"{}\", "
        "\"body_bytes\": {}, \"selected_bytes\": {}, \"expected_output_bytes\": {}, "
        "\"expected_output_hash\": \"{}\"}}{}\n",
        json_quote(shape_name(f.shape)), f.info.records, f.spec.seed, f.info.file_bytes,
        hex64(f.info.file_hash), f.info.body_bytes, f.info.selected_bytes, f.info.output_bytes,
        hex64(f.info.output_hash), i + 1 < results.fixtures.size() ? "," : "");
  }
  out += "  ],\n  \"conditions\": [\n";
  for (size_t i = 0; i < summary.size(); ++i) {
    const ConditionSummary& cs = summary[i];
    const Condition& c = kSeedConditions[cs.condition];
    out += fmt::format(
        "    {{\"name\": {}, \"description\": {}, \"shape\": {}, \"budget_bytes\": {}, \"queue_limit\": {}, "
        "\"hold_us\": {}, \"gap_us\": {}, \"outputs_equal\": {}, \"policies\": [\n",
        json_quote(c.name), json_quote(c.description), json_quote(shape_name(c.shape)), c.budget_bytes,
        c.queue_limit, c.timing.hold_ns / 1000, c.timing.gap_ns / 1000, cs.outputs_equal);
    for (size_t j = 0; j < cs.policies.size(); ++j) {
      const PolicySummary& p = cs.policies[j];
      out += fmt::format(
          "      {{\"policy\": {}, \"runs\": {}, \"finish_ms\": {}, \"p99_ms\": {}, \"peak_managed_mib\": "
          "{}, "
          "\"peak_live_mib\": {}, \"vm_hwm_mib\": {}, \"rusage_maxrss_mib\": {:.4f}, \"copied_mib\": {:.4f}, "
          "\"copies\": {}, "
          "\"allocation_calls\": {}, \"reuses\": {}, \"evictions\": {}, \"peak_queue_depth\": {}, "
          "\"space_waits\": {}, \"sleeps\": {}, \"ratio_to_baseline\": {{\"finish\": {:.4f}, \"p99\": "
          "{:.4f}, "
          "\"peak_managed\": {:.4f}, \"vm_hwm\": {:.4f}}}}}{}\n",
          json_quote(policy_name(p.policy)), p.runs, spread_json(p.finish_ms), spread_json(p.p99_ms),
          spread_json(p.peak_managed_mib), spread_json(p.peak_live_mib), spread_json(p.vm_hwm_mib),
          p.rusage_maxrss_mib, p.copied_mib, p.copies, p.allocation_calls, p.reuses, p.evictions,
          p.peak_queue_depth, p.space_waits, p.sleeps, p.ratio_finish, p.ratio_p99, p.ratio_peak_managed,
          p.ratio_vm_hwm, j + 1 < cs.policies.size() ? "," : "");
    }
    out += fmt::format("    ]}}{}\n", i + 1 < summary.size() ? "," : "");
  }
  out += "  ],\n  \"runs\": [\n";
  for (size_t i = 0; i < results.runs.size(); ++i) {
    out += "    " + run_json(results.runs[i]) + (i + 1 < results.runs.size() ? ",\n" : "\n");
  }
  out += "  ]\n}\n";
  return out;
}

std::string render_markdown(const BenchResults& results, const std::vector<ConditionSummary>& summary) {
  const BenchOptions& o = results.options;
  const Environment& e = results.environment;
  std::string base(policy_name(o.baseline));
  std::string out = "# Buffer retention\n\n";
  out += fmt::format("Generated {} by `{}`{}.\n\n", e.generated_utc, o.command_line,
                     o.quick ? " (quick smoke run: too short to quote)" : "");
  out += fmt::format("Machine: {}, {} online CPUs, {}; {}; build {}; timer slack {} ns; {}.\n\n", e.cpu_model,
                     e.online_cpus, e.kernel, e.compiler, e.build, e.timer_slack_ns,
                     o.cpu >= 0 ? fmt::format("driver and runs pinned to CPU {}", o.cpu) : "not pinned");
  out += fmt::format(
      "{} records per condition, seed {}, {} repetitions per policy in a shuffled order after one warm-up "
      "run "
      "each; every run is its own process. Medians, with the range over repetitions in parentheses. Managed "
      "= fixed space + live buffers + pooled free buffers (requested bytes); live = the buffers held by "
      "reads "
      "and queued results alone; VmHWM = peak resident set of the "
      "run's process from /proc/self/status. Finish = first read to last output and cleanup, synthetic waits "
      "included. p99 = in-process latency from a record's header read to its output written. "
      "Sleeps = times the run slept until its head result was due (each costs more than the 20 us asked, see "
      "docs/retention.md). ×{} = median of per-repetition ratios to `{}` in the same repetition.\n",
      o.records, o.seed, o.repetitions, base, base);
  for (const ConditionSummary& cs : summary) {
    const Condition& c = kSeedConditions[cs.condition];
    const FixtureInfo& fx = fixture_info(results, c.shape);
    out +=
        fmt::format("\n## {}\n\n{}. Input {:.2f} MiB, fixture hash `{}`; expected output hash `{}`: {}.\n\n",
                    c.name, c.description, mib(fx.file_bytes), hex64(fx.file_hash), hex64(fx.output_hash),
                    cs.outputs_equal ? "every run's output matched" : "OUTPUTS DIFFER");
    out += fmt::format(
        "| policy | peak managed MiB | peak live MiB | VmHWM MiB | finish ms | p99 ms | copied MiB | alloc "
        "calls | peak queue "
        "| sleeps | ×{0} managed | ×{0} VmHWM | ×{0} finish | ×{0} p99 |\n",
        base);
    out += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const PolicySummary& p : cs.policies) {
      out += fmt::format(
          "| {} | {:.3f} | {:.3f} | {:.2f} | {} | {:.2f} | {:.3f} | {:.0f} | {:.0f} | {:.0f} | {:.3f} | "
          "{:.3f} | {:.3f} | {:.3f} |\n",
          policy_name(p.policy), p.peak_managed_mib.median, p.peak_live_mib.median, p.vm_hwm_mib.median,
          spread_text(p.finish_ms, 2), p.p99_ms.median, p.copied_mib, p.allocation_calls, p.peak_queue_depth,
          p.sleeps, p.ratio_peak_managed, p.ratio_vm_hwm, p.ratio_finish, p.ratio_p99);
    }
  }
  return out;
}

Status write_reports(const BenchResults& results, const std::string& out_dir, std::string_view stem) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return error("cannot create {}: {}", out_dir, ec.message());
  auto summary = summarize(results);
  std::string base = out_dir + "/" + std::string(stem);
  if (Status s = write_file(base + ".json", render_json(results, summary)); !s.ok()) return s;
  return write_file(base + ".md", render_markdown(results, summary));
}

}  // namespace aup::retention
