#include "bench/events/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace aup::bench::events {

namespace {

std::vector<double> field(const std::vector<Timing>& ts, const std::function<double(const Timing&)>& f) {
  std::vector<double> v;
  for (const Timing& t : ts) v.push_back(f(t));
  return v;
}
std::vector<double> walls(const std::vector<Timing>& ts) {
  return field(ts, [](const Timing& t) { return t.wall_ns; });
}

std::string json_timings(const std::vector<Timing>& ts) {
  std::string out = "[";
  for (size_t i = 0; i < ts.size(); ++i) {
    out += fmt::format("{}{{\"wall_ms\": {:.3f}, \"cpu_ms\": {:.3f}, \"user_ms\": {:.3f}, \"max_rss_kb\": {}}}",
                       i ? ", " : "", ts[i].wall_ns / 1e6, ts[i].consumer_cpu_ns / 1e6, ts[i].consumer_user_ns / 1e6,
                       ts[i].consumer_max_rss_kb);
  }
  return out + "]";
}

// Median over repetitions of a's wall time over b's.
double ratio(const std::vector<Timing>& a, const std::vector<Timing>& b) { return ratio_median(walls(a), walls(b)); }

const StartupResult* startup_of(const Results& r, const std::string& module) {
  for (const StartupResult& s : r.startups) {
    if (s.module == module) return &s;
  }
  return nullptr;
}

std::string base_name(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The figures of one workload, medians over repetitions.
struct Figures {
  double aup_ms, pipe_ms, lines_ms, startup_ms;
  double requests_per_s, us_per_request, net_us_per_request, cpu_us_per_request;
  double ratio_pipe, ratio_lines;
  double max_rss_mb;
  double aup_min_ms, aup_max_ms;  // the spread over repetitions
};

Figures figures(const Results& res, const WorkloadResult& r) {
  Figures f{};
  double n = static_cast<double>(r.w.requests);
  f.aup_ms = median(walls(r.aup)) / 1e6;
  std::vector<double> w = walls(r.aup);
  f.aup_min_ms = w.empty() ? 0 : *std::min_element(w.begin(), w.end()) / 1e6;
  f.aup_max_ms = w.empty() ? 0 : *std::max_element(w.begin(), w.end()) / 1e6;
  f.pipe_ms = median(walls(r.pipe)) / 1e6;
  f.lines_ms = median(walls(r.lines)) / 1e6;
  const StartupResult* s = startup_of(res, r.w.module);
  f.startup_ms = s ? median(walls(s->runs)) / 1e6 : 0;
  f.requests_per_s = median(field(r.aup, [&](const Timing& t) { return n / (t.wall_ns / 1e9); }));
  f.us_per_request = f.aup_ms * 1e3 / n;
  f.net_us_per_request = (f.aup_ms - f.startup_ms) * 1e3 / n;
  f.cpu_us_per_request = median(field(r.aup, [](const Timing& t) { return t.consumer_cpu_ns; })) / 1e3 / n;
  f.ratio_pipe = ratio(r.aup, r.pipe);
  f.ratio_lines = ratio(r.aup, r.lines);
  long rss = 0;
  for (const Timing& t : r.aup) rss = std::max(rss, t.consumer_max_rss_kb);
  f.max_rss_mb = static_cast<double>(rss) / 1024;
  return f;
}

const WorkloadResult* workload(const Results& r, const std::string& name) {
  for (const WorkloadResult& w : r.workloads) {
    if (w.w.name == name) return &w;
  }
  return nullptr;
}

// µs per window query: the views input minus the adds input, per
// repetition, over the number of queries; wall time, or aup's CPU time.
double view_us(const Results& r, const Options& o, bool cpu = false) {
  const WorkloadResult* adds = workload(r, "ledger_adds");
  const WorkloadResult* views = workload(r, "ledger_views");
  if (!adds || !views || o.ledger_shape.views == 0) return 0;
  std::vector<double> d;
  for (size_t i = 0; i < adds->aup.size() && i < views->aup.size(); ++i) {
    double v = cpu ? views->aup[i].consumer_cpu_ns : views->aup[i].wall_ns;
    double a = cpu ? adds->aup[i].consumer_cpu_ns : adds->aup[i].wall_ns;
    d.push_back((v - a) / 1e3 / static_cast<double>(o.ledger_shape.views));
  }
  return median(d);
}

}  // namespace

std::string to_json(const Environment& env, const Options& o, const Results& r) {
  std::string out = json_opening("events", env, o.command);
  out += fmt::format("  \"aup_build\": {},\n  \"load_average_at_start\": {:.2f},\n", json_string(env.build_type),
                     env.load_average);
  out += fmt::format("  \"timing\": \"own: posix_spawn, CLOCK_MONOTONIC from first spawn to last exit, CPU from wait4\",\n");
  out += fmt::format("  \"repetitions\": {},\n  \"seed\": {},\n", o.reps, o.seed);
  out += fmt::format("  \"view_us_per_query\": {:.4f},\n  \"view_cpu_us_per_query\": {:.4f},\n", view_us(r, o),
                     view_us(r, o, true));
  out += "  \"startups\": [\n";
  for (size_t i = 0; i < r.startups.size(); ++i) {
    const StartupResult& s = r.startups[i];
    out += fmt::format("    {{\"module\": {}, \"runs\": {}}}{}\n", json_string(s.module), json_timings(s.runs),
                       i + 1 < r.startups.size() ? "," : "");
  }
  out += "  ],\n  \"workloads\": [\n";
  for (size_t i = 0; i < r.workloads.size(); ++i) {
    const WorkloadResult& w = r.workloads[i];
    Figures f = figures(r, w);
    out += fmt::format("    {{\"name\": {}, \"module\": {}, \"requests\": {}, \"events\": {}, \"bytes\": {},\n",
                       json_string(w.w.name), json_string(w.w.module), w.w.requests, w.w.events, w.w.bytes);
    out += fmt::format("     \"answers\": {{\"lines\": {}, \"ok\": {}, \"failed\": {}}},\n", w.responses, w.ok, w.failed);
    out += fmt::format(
        "     \"median\": {{\"aup_wall_ms\": {:.3f}, \"pipe_wall_ms\": {:.3f}, \"lines_wall_ms\": {:.3f}, "
        "\"startup_wall_ms\": {:.3f}, \"requests_per_s\": {:.1f}, \"us_per_request\": {:.4f}, "
        "\"net_us_per_request\": {:.4f}, \"aup_cpu_us_per_request\": {:.4f}, \"aup_over_pipe\": {:.3f}, "
        "\"aup_over_lines\": {:.3f}, \"aup_max_rss_mb\": {:.1f}}},\n",
        f.aup_ms, f.pipe_ms, f.lines_ms, f.startup_ms, f.requests_per_s, f.us_per_request, f.net_us_per_request,
        f.cpu_us_per_request, f.ratio_pipe, f.ratio_lines, f.max_rss_mb);
    out += fmt::format("     \"aup\": {},\n     \"pipe\": {},\n     \"lines\": {}}}{}\n", json_timings(w.aup),
                       json_timings(w.pipe), json_timings(w.lines), i + 1 < r.workloads.size() ? "," : "");
  }
  out += "  ]\n}\n";
  return out;
}

std::string to_markdown(const Environment& env, const Options& o, const Results& r) {
  std::string md = markdown_opening("Events on a pipe: `aup run --memory`", env, o.command);
  md += fmt::format("Machine: {}; aup built {}; 1-minute load average at the start {:.2f}.\n\n", env.machine,
                    env.build_type, env.load_average);
  md += fmt::format(
      "Timing: this program's own (not hyperfine): each command is started with posix_spawn, no shell; wall "
      "time from the first spawn to the last exit, aup's CPU time from wait4. {} repetitions; in each, a "
      "workload's three commands run in a rotating order. Medians over repetitions; ratios are medians of "
      "the per-repetition ratios. Before timing, one run of each workload is checked: every request "
      "answered, the expected numbers of ok and failed answers (and for the views, the sum of the counts).\n\n",
      o.reps);
  md += "Commands, with INPUT the workload's generated file:\n\n";
  md += "- *aup*: `cat INPUT | aup run MODULE --memory > /dev/null`\n";
  md += "- *pipe*: `cat INPUT | cat > /dev/null` (moving the bytes through the pipe)\n";
  md += "- *wc -l*: `cat INPUT | wc -l > /dev/null` (a trivial line reader)\n";
  md += "- *start-up*: `aup run MODULE --memory < /dev/null` (compiling the module and starting)\n\n";
  md += "| workload | requests | input MB | answers ok / failed | aup ms (min–max) | requests/s | µs/request | µs/request "
        "net of start-up | aup CPU µs/request | aup / pipe | aup / wc -l | aup peak RSS MB |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const WorkloadResult& w : r.workloads) {
    Figures f = figures(r, w);
    md += fmt::format("| {} | {} | {:.1f} | {} / {} | {:.0f} ({:.0f}–{:.0f}) | {} | {:.3f} | {:.3f} | {:.3f} | {:.1f} | {:.1f} | {:.1f} |\n",
                      w.w.name, grouped(w.w.requests), static_cast<double>(w.w.bytes) / 1e6, grouped(w.ok),
                      grouped(w.failed), f.aup_ms, f.aup_min_ms, f.aup_max_ms, grouped(static_cast<uint64_t>(f.requests_per_s)), f.us_per_request,
                      f.net_us_per_request, f.cpu_us_per_request, f.ratio_pipe, f.ratio_lines, f.max_rss_mb);
  }
  md += "\n| reference | workload | median wall ms |\n|---|---|---:|\n";
  for (const WorkloadResult& w : r.workloads) {
    Figures f = figures(r, w);
    md += fmt::format("| pipe | {} | {:.2f} |\n| wc -l | {} | {:.2f} |\n", w.w.name, f.pipe_ms, w.w.name, f.lines_ms);
  }
  for (const StartupResult& s : r.startups) {
    md += fmt::format("| start-up | {} | {:.2f} |\n", base_name(s.module), median(walls(s.runs)) / 1e6);
  }
  md += fmt::format(
      "\nWorkloads: *bank* is examples/bank/bank.aup with {} accounts opened and funded, then {} random "
      "transfers (1% from an unknown account, 0.5% to the same account, 0.5% not whole cents, the rest fail "
      "only on insufficient funds). *ledger_adds* is bench/events/ledger.aup with {} adds in random key "
      "order; *ledger_views* is the same adds followed by {} `window` queries (a view's count, first and "
      "last over 1 to {} keys).\n\n",
      grouped(o.bank_shape.accounts), grouped(o.bank_shape.transfers), grouped(o.ledger_shape.adds),
      grouped(o.ledger_shape.views), grouped(o.ledger_shape.max_width));
  md += fmt::format("One `window` query costs {:.3f} µs of wall time and {:.3f} µs of aup's CPU time "
                    "(ledger_views − ledger_adds, per repetition, over the queries).\n",
                    view_us(r, o), view_us(r, o, true));
  return md;
}

}  // namespace aup::bench::events
