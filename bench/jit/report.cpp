#include "bench/jit/report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <functional>

#include "bench/common/measure.h"
#include "bench/jit/process.h"
#include "bench/jit/tpcc_pipe.h"

namespace aup::bench::jit {

namespace {

std::vector<double> each(const std::vector<Run>& runs, const std::function<double(const Run&)>& f) {
  std::vector<double> v;
  for (const Run& r : runs) v.push_back(f(r));
  return v;
}

// The median of the `aup: jit` milliseconds of `runs`; nothing when none has them.
std::optional<double> median_stats_ms(const std::vector<Run>& runs) {
  std::vector<double> ms;
  for (const Run& x : runs) {
    if (std::optional<double> v = stats_ms(x.jit_stats)) ms.push_back(*v);
  }
  if (ms.empty()) return std::nullopt;
  return median(ms);
}

// The figures of one event case, per side (medians over repetitions).
struct EventFigures {
  double whole_us[2] = {0, 0};  // whole-process CPU per event
  double base_us[2] = {0, 0};   // the baseline's
  double net_us[2] = {0, 0};    // (work − baseline) per event, per repetition
  std::vector<double> net_reps[2];
  std::vector<double> whole_reps[2];
  std::optional<double> compile_ms[2];  // from the work runs' `aup: jit` lines
  double net_ratio = 0, net_speedup = 0, whole_ratio = 0, whole_speedup = 0;
};

EventFigures figures(const EventResult& r) {
  EventFigures f;
  double n = static_cast<double>(r.c.events);
  for (size_t s = 0; s < 2; ++s) {
    const std::vector<Run>& work = r.work[s];
    const std::vector<Run>& base = r.base[s];
    f.whole_reps[s] = each(work, [&](const Run& x) { return x.usage.cpu_ns / 1e3 / n; });
    for (size_t i = 0; i < work.size() && i < base.size(); ++i) {
      f.net_reps[s].push_back((work[i].usage.cpu_ns - base[i].usage.cpu_ns) / 1e3 / n);
    }
    f.whole_us[s] = median(f.whole_reps[s]);
    f.base_us[s] = median(each(base, [&](const Run& x) { return x.usage.cpu_ns / 1e3 / n; }));
    f.net_us[s] = median(f.net_reps[s]);
    f.compile_ms[s] = median_stats_ms(work);
  }
  f.net_ratio = ratio_median(f.net_reps[1], f.net_reps[0]);
  f.net_speedup = ratio_median(f.net_reps[0], f.net_reps[1]);
  f.whole_ratio = ratio_median(f.whole_reps[1], f.whole_reps[0]);
  f.whole_speedup = ratio_median(f.whole_reps[0], f.whole_reps[1]);
  return f;
}

// The figures of tpcc-pipe, per side (medians over repetitions): its net
// CPU per transaction, as an event case's net per event, and the CPU of
// the load alone, which holds start-up and the JIT's compilation.
struct PipeFigures {
  EventFigures net;  // net_us, net_ratio, net_speedup: (load + transactions − load alone) ÷ N
  double load_ms[2] = {0, 0};
  std::optional<double> compile_ms[2];  // from the load runs' `aup: jit` lines
  double load_ratio = 0, load_speedup = 0;
};

PipeFigures pipe_figures(const EventResult& r) {
  PipeFigures f;
  f.net = figures(r);
  std::vector<double> load[2];
  for (size_t s = 0; s < 2; ++s) {
    load[s] = each(r.base[s], [](const Run& x) { return x.usage.cpu_ns / 1e6; });
    f.load_ms[s] = median(load[s]);
    f.compile_ms[s] = median_stats_ms(r.base[s]);
  }
  f.load_ratio = ratio_median(load[1], load[0]);
  f.load_speedup = ratio_median(load[0], load[1]);
  return f;
}

struct TpccFigures {
  double cpu_us[2] = {0, 0};
  double tps[2] = {0, 0};
  double cpu_ratio = 0, cpu_speedup = 0, tps_ratio = 0;
  double startup_ms[2] = {0, 0};  // CPU of the module's start-up
  std::optional<double> compile_ms[2];
};

TpccFigures figures(const TpccResult& r) {
  TpccFigures f;
  std::vector<double> cpu[2], tps[2];
  for (size_t s = 0; s < 2; ++s) {
    for (const TpccRun& t : r.runs[s]) {
      cpu[s].push_back(t.cpu_us_per_transaction);
      tps[s].push_back(t.transactions_per_s);
    }
    f.cpu_us[s] = median(cpu[s]);
    f.tps[s] = median(tps[s]);
    f.startup_ms[s] = median(each(r.startups[s], [](const Run& x) { return x.usage.cpu_ns / 1e6; }));
    f.compile_ms[s] = median_stats_ms(r.startups[s]);
  }
  f.cpu_ratio = ratio_median(cpu[1], cpu[0]);
  f.cpu_speedup = ratio_median(cpu[0], cpu[1]);
  f.tps_ratio = ratio_median(tps[1], tps[0]);
  return f;
}

// µs with a precision that suits its size.
std::string us(double v) {
  if (std::fabs(v) >= 1000) {
    return (v < 0 ? "-" : "") + grouped(static_cast<uint64_t>(std::llround(std::fabs(v))));
  }
  if (std::fabs(v) >= 100) return fmt::format("{:.1f}", v);
  return fmt::format("{:.2f}", v);
}

std::string opt_number(const std::optional<double>& v) { return v ? fmt::format("{:.3f}", *v) : "null"; }

// A `aup: jit` object as JSON: as it is when it looks like an object, else
// as a string; null when there was none.
std::string raw_stats(const std::string& s) {
  if (s.empty()) return "null";
  if (s.front() == '{' && s.back() == '}') return s;
  return json_string(s);
}

std::string json_runs(const std::vector<Run>& runs) {
  std::string out = "[";
  for (size_t i = 0; i < runs.size(); ++i) {
    const Usage& u = runs[i].usage;
    out += fmt::format("{}{{\"cpu_ms\": {:.3f}, \"user_ms\": {:.3f}, \"wall_ms\": {:.3f}, \"max_rss_kb\": {}, "
                       "\"jit_stats\": {}}}",
                       i ? ", " : "", u.cpu_ns / 1e6, u.user_ns / 1e6, u.wall_ns / 1e6, u.max_rss_kb,
                       raw_stats(runs[i].jit_stats));
  }
  return out + "]";
}

std::string side_json(const Side& s) {
  return fmt::format("{{\"label\": {}, \"engine\": {}}}", json_string(s.label()),
                     s.engine.empty() ? "null" : json_string(s.engine));
}

std::string ratio_text(double r) { return std::isfinite(r) ? fmt::format("{:.3f}", r) : "–"; }
std::string speedup_text(double s) { return std::isfinite(s) ? fmt::format("{:.2f}x", s) : "–"; }

// tpcc-pipe as the JSON object of "tpcc_pipe".
std::string pipe_json(const Options& o, const EventResult& e) {
  PipeFigures f = pipe_figures(e);
  std::string out = fmt::format(
      "{{\"name\": {}, \"module\": {}, \"flags\": {}, \"shape\": {}, \"transactions\": {}, \"requests\": {}, "
      "\"ok\": {}, \"rollbacks\": {},\n",
      json_string(e.c.name), json_string(e.c.module), json_string(command_text(e.c.flags)), json_string(e.c.shape),
      e.c.events, e.c.requests, e.ok, e.failed);
  out += fmt::format("    \"ratio_net\": {:.4f}, \"speedup_net\": {:.4f}, \"ratio_load\": {:.4f}, "
                     "\"speedup_load\": {:.4f},\n    \"per_side\": [\n",
                     f.net.net_ratio, f.net.net_speedup, f.load_ratio, f.load_speedup);
  for (size_t s = 0; s < 2; ++s) {
    out += fmt::format(
        "      {{\"side\": {}, \"net_cpu_us_per_transaction\": {:.4f}, \"load_cpu_ms\": {:.3f}, "
        "\"load_compile_ms\": {},\n        \"work\": {},\n        \"load\": {}}}{}\n",
        json_string(o.sides[s].label()), f.net.net_us[s], f.load_ms[s], opt_number(f.compile_ms[s]),
        json_runs(e.work[s]), json_runs(e.base[s]), s == 0 ? "," : "");
  }
  return out + "    ]}";
}

// The Markdown's input line of tpcc-pipe, with the load's own figures.
std::string pipe_inputs(const Options& o, const EventResult& e) {
  PipeFigures f = pipe_figures(e);
  auto compile = [](const std::optional<double>& v) {
    return v ? fmt::format(", compile {:.1f} ms", *v) : std::string();
  };
  return fmt::format(
      "- *TPC-C, owner path* (tpcc-pipe): {}; no socket and no I/O thread, so only what the engine changes: the "
      "module's code and the runtime calls it makes. CPU µs/transaction: each repetition's (load and transactions − "
      "load alone) ÷ {}. The load alone (CPU, median; start-up and compilation included): {} {:.1f} ms{}; {} {:.1f} "
      "ms{} (compile ms from `--stats`). Checked before the timed runs: every answer ok but the {} New-Orders "
      "that the generator makes roll back (`{}`), and both sides' answers the same, byte for byte. Not pinned to "
      "a CPU, like compute and tables (`--tpcc-cpus` pins aup-tpcc's server).\n",
      e.c.shape, grouped(e.c.events), o.sides[0].label(), f.load_ms[0], compile(f.compile_ms[0]),
      o.sides[1].label(), f.load_ms[1], compile(f.compile_ms[1]), grouped(e.failed), kRollbackError);
}

}  // namespace

std::optional<double> stats_ms(const std::string& object) {
  size_t at = object.find("\"compile_ms\":");
  if (at != std::string::npos) return std::strtod(object.c_str() + at + 13, nullptr);
  at = object.find("_ms\":");
  if (at == std::string::npos) return std::nullopt;
  return std::strtod(object.c_str() + at + 5, nullptr);
}

bool sane(const Results& r) {
  auto ok = [](double v) { return std::isfinite(v) && v > 0; };
  for (const EventResult& e : r.events) {
    EventFigures f = figures(e);
    for (size_t s = 0; s < 2; ++s) {
      if (e.work[s].empty() || e.base[s].empty() || !ok(f.whole_us[s]) || !std::isfinite(f.net_us[s])) return false;
    }
  }
  if (r.tpcc_pipe) {
    PipeFigures f = pipe_figures(*r.tpcc_pipe);
    for (size_t s = 0; s < 2; ++s) {
      if (r.tpcc_pipe->work[s].empty() || r.tpcc_pipe->base[s].empty() || !ok(f.load_ms[s]) ||
          !std::isfinite(f.net.net_us[s])) {
        return false;
      }
    }
  }
  if (r.tpcc) {
    TpccFigures f = figures(*r.tpcc);
    for (size_t s = 0; s < 2; ++s) {
      if (!ok(f.cpu_us[s]) || !ok(f.tps[s])) return false;
    }
  }
  return true;
}

std::string to_json(const Environment& env, const Options& o, const Results& r) {
  std::string out = json_opening("jit", env, o.command);
  out += fmt::format("  \"aup_build\": {},\n  \"load_average_at_start\": {:.2f},\n", json_string(env.build_type),
                     env.load_average);
  out += "  \"timing\": \"CPU of the aup process (user + system, wait4; aup-tpcc: the server's from /proc over the "
         "timed phase); medians over repetitions; ratios are medians of per-repetition ratios, "
         "sides[1] / sides[0]\",\n";
  out += fmt::format("  \"repetitions\": {},\n  \"seed\": {},\n  \"quick\": {},\n", o.reps,
                     o.seed, o.quick);
  out += fmt::format("  \"sides\": [{}, {}],\n", side_json(o.sides[0]), side_json(o.sides[1]));
  out += "  \"cases\": [\n";
  for (size_t i = 0; i < r.events.size(); ++i) {
    const EventResult& e = r.events[i];
    EventFigures f = figures(e);
    out += fmt::format("    {{\"name\": {}, \"module\": {}, \"shape\": {}, \"events\": {}, \"requests\": {},\n",
                       json_string(e.c.name), json_string(e.c.module), json_string(e.c.shape), e.c.events,
                       e.c.requests);
    out += fmt::format("     \"ratio_net\": {:.4f}, \"speedup_net\": {:.4f}, \"ratio_whole\": {:.4f}, "
                       "\"speedup_whole\": {:.4f},\n     \"per_side\": [\n",
                       f.net_ratio, f.net_speedup, f.whole_ratio, f.whole_speedup);
    for (size_t s = 0; s < 2; ++s) {
      out += fmt::format(
          "       {{\"side\": {}, \"cpu_us_per_event\": {:.4f}, \"baseline_cpu_us_per_event\": {:.4f}, "
          "\"net_cpu_us_per_event\": {:.4f}, \"compile_ms\": {},\n"
          "        \"work\": {},\n        \"baseline\": {}}}{}\n",
          json_string(o.sides[s].label()), f.whole_us[s], f.base_us[s], f.net_us[s], opt_number(f.compile_ms[s]),
          json_runs(e.work[s]), json_runs(e.base[s]), s == 0 ? "," : "");
    }
    out += fmt::format("     ]}}{}\n", i + 1 < r.events.size() ? "," : "");
  }
  out += "  ],\n";
  out += "  \"tpcc_pipe\": " + (r.tpcc_pipe ? pipe_json(o, *r.tpcc_pipe) : std::string("null")) + ",\n";
  if (r.tpcc) {
    const TpccResult& t = *r.tpcc;
    TpccFigures f = figures(t);
    out += fmt::format(
        "  \"tpcc\": {{\"warehouses\": {}, \"terminals\": {}, \"seconds\": {}, \"warmup\": {}, \"store_parent\": {}, "
        "\"cpus\": {}, \"load_s\": {:.2f},\n",
        o.warehouses, o.terminals, o.seconds, o.warmup, json_string(o.tpcc_dir), json_string(o.tpcc_cpus), t.load_s);
    out += fmt::format("    \"ratio_cpu\": {:.4f}, \"speedup_cpu\": {:.4f}, \"ratio_throughput\": {:.4f},\n",
                       f.cpu_ratio, f.cpu_speedup, f.tps_ratio);
    out += "    \"per_side\": [\n";
    for (size_t s = 0; s < 2; ++s) {
      out += fmt::format("      {{\"side\": {}, \"cpu_us_per_transaction\": {:.3f}, \"transactions_per_s\": {:.1f}, "
                         "\"startup_cpu_ms\": {:.3f}, \"startup_compile_ms\": {},\n        \"startups\": {},\n"
                         "        \"runs\": [\n",
                         json_string(o.sides[s].label()), f.cpu_us[s], f.tps[s], f.startup_ms[s],
                         opt_number(f.compile_ms[s]), json_runs(t.startups[s]));
      for (size_t i = 0; i < t.runs[s].size(); ++i) {
        out += "        " + t.runs[s][i].json + (i + 1 < t.runs[s].size() ? ",\n" : "\n");
      }
      out += fmt::format("      ]}}{}\n", s == 0 ? "," : "");
    }
    out += "    ]}\n";
  } else {
    out += "  \"tpcc\": null\n";
  }
  out += "}\n";
  return out;
}

std::string to_markdown(const Environment& env, const Options& o, const Results& r) {
  const std::string a = o.sides[0].label(), b = o.sides[1].label();
  std::string md = markdown_opening(fmt::format("JIT against VM: `aup run` with {} and with {}", b, a), env, o.command);
  md += fmt::format("Machine: {}; aup built {}; 1-minute load average at the start {:.2f}.{}\n\n", env.machine,
                    env.build, env.load_average,
                    o.quick ? " **Quick run: tiny inputs, one repetition; not figures.**" : "");
  md += fmt::format(
      "CPU time of the aup process (user + system), median of {} repetitions; {} ÷ {} is the median of the "
      "per-repetition ratios, speedup the median of {} ÷ {}. *Net*: each input's run minus a run of as many "
      "`noop` events with the same arguments (the same module, so reading, dispatch, answers, start-up and "
      "compilation cancel); *whole process*: everything, start-up and compilation included. Before the timed "
      "runs, one run of each input on each side must answer every request ok, and both sides' answers must be "
      "identical, byte for byte.\n\n",
      o.reps, b, a, a, b);
  md += fmt::format("| case | measured | {} | {} | {} ÷ {} | speedup |\n|---|---|---:|---:|---:|---:|\n", a, b, b, a);
  for (const EventResult& e : r.events) {
    EventFigures f = figures(e);
    md += fmt::format("| {} | CPU µs/event, net of the baseline | {} | {} | {} | {} |\n", e.c.name, us(f.net_us[0]),
                      us(f.net_us[1]), ratio_text(f.net_ratio), speedup_text(f.net_speedup));
    md += fmt::format("| {} | CPU µs/event, whole process | {} | {} | {} | {} |\n", e.c.name, us(f.whole_us[0]),
                      us(f.whole_us[1]), ratio_text(f.whole_ratio), speedup_text(f.whole_speedup));
  }
  if (r.tpcc_pipe) {
    PipeFigures f = pipe_figures(*r.tpcc_pipe);
    md += fmt::format("| TPC-C, owner path | CPU µs/transaction, net of the load | {} | {} | {} | {} |\n",
                      us(f.net.net_us[0]), us(f.net.net_us[1]), ratio_text(f.net.net_ratio),
                      speedup_text(f.net.net_speedup));
    md += fmt::format("| TPC-C, owner path | CPU ms of the load alone | {:.1f} | {:.1f} | {} | {} |\n", f.load_ms[0],
                      f.load_ms[1], ratio_text(f.load_ratio), speedup_text(f.load_speedup));
  }
  if (r.tpcc) {
    TpccFigures f = figures(*r.tpcc);
    md += fmt::format("| TPC-C | server CPU µs/transaction | {} | {} | {} | {} |\n", us(f.cpu_us[0]),
                      us(f.cpu_us[1]), ratio_text(f.cpu_ratio), speedup_text(f.cpu_speedup));
    md += fmt::format("| TPC-C | transactions/s | {} | {} | {} | |\n", grouped(static_cast<uint64_t>(f.tps[0])),
                      grouped(static_cast<uint64_t>(f.tps[1])), ratio_text(f.tps_ratio));
  }
  if (!r.events.empty()) {
    md += fmt::format("\n| case | events | baseline µs/event, {} | baseline µs/event, {} | compile ms, {} | "
                      "compile ms, {} |\n|---|---:|---:|---:|---:|---:|\n",
                      a, b, a, b);
    for (const EventResult& e : r.events) {
      EventFigures f = figures(e);
      auto ms = [](const std::optional<double>& v) { return v ? fmt::format("{:.1f}", *v) : std::string("–"); };
      md += fmt::format("| {} | {} | {} | {} | {} | {} |\n", e.c.name, grouped(e.c.events), us(f.base_us[0]),
                        us(f.base_us[1]), ms(f.compile_ms[0]), ms(f.compile_ms[1]));
    }
    md += "\nCompile ms: from `--stats`'s `aup: jit {...}` line (median over the measured runs); – where aup "
          "printed none.\n";
  }
  if (!r.events.empty() || r.tpcc_pipe || r.tpcc) md += "\nInputs:\n\n";
  for (const EventResult& e : r.events) md += fmt::format("- *{}*: {}.\n", e.c.name, e.c.shape);
  if (r.tpcc_pipe) md += pipe_inputs(o, *r.tpcc_pipe);
  if (r.tpcc) {
    md += fmt::format(
        "- *TPC-C*: `aup-tpcc run --backend aup` (bench/tpcc), W={}, {} terminals, {} s timed after {} s of warm-up, "
        "`--cpus {}`; the store in {} (loaded once with aup's default engine in {:.1f} s, a fresh copy for every "
        "run); the server's CPU from /proc over the timed phase; consistency checked after every run.\n",
        o.warehouses, o.terminals, o.seconds, o.warmup, o.tpcc_cpus, o.tpcc_dir, r.tpcc->load_s);
    TpccFigures f = figures(*r.tpcc);
    auto ms = [](const std::optional<double>& v) { return v ? fmt::format(", compile {:.1f} ms", *v) : std::string(); };
    md += fmt::format(
        "- *TPC-C module start-up* (`aup run {} --memory --stats` on no input, CPU, median): {} {:.1f} ms{}; "
        "{} {:.1f} ms{}.\n",
        o.tpcc_module, a, f.startup_ms[0], ms(f.compile_ms[0]), b, f.startup_ms[1], ms(f.compile_ms[1]));
  }
  md += "\nEvery run of each repetition is in jit.json.\n";
  return md;
}

}  // namespace aup::bench::jit
