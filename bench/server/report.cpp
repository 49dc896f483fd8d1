#include "bench/server/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "bench/common/measure.h"

namespace aup::bench::server {

namespace {

using Field = std::function<double(const Sample&)>;
using StatsField = std::function<double(const StatsLine&)>;

// The runs of one store at one connection count, in repetition order.
std::vector<const Sample*> runs_of(const std::vector<Sample>& samples, const std::string& store, uint32_t connections) {
  std::vector<const Sample*> out;
  for (const Sample& s : samples) {
    if (s.store == store && s.connections == connections) out.push_back(&s);
  }
  std::sort(out.begin(), out.end(), [](const Sample* a, const Sample* b) { return a->rep < b->rep; });
  return out;
}

std::vector<double> values(const std::vector<const Sample*>& runs, const Field& f) {
  std::vector<double> v;
  for (const Sample* s : runs) v.push_back(f(*s));
  return v;
}

// The median over every --stats line of every run.
double stats_median(const std::vector<const Sample*>& runs, const StatsField& f) {
  std::vector<double> v;
  for (const Sample* s : runs) {
    for (const StatsLine& l : s->stats) v.push_back(f(l));
  }
  return median(std::move(v));
}

// Medians of one point, and its ratios to the in-memory server's point at
// the same connection count (medians of per-repetition ratios).
struct Figures {
  double events_per_s = 0, events_min = 0, events_max = 0;
  double p50_us = 0, p99_us = 0;
  double cpu_us = 0, user_us = 0, system_us = 0, client_cpu_us = 0;
  double batch = 0, commit_p50_us = 0, commit_p99_us = 0, owner_busy = 0;
  double ratio_events = 0, ratio_p50 = 0, ratio_p99 = 0, ratio_cpu = 0;
};

const Field kEvents = [](const Sample& s) { return s.events_per_s; };
const Field kP50 = [](const Sample& s) { return s.p50_us; };
const Field kP99 = [](const Sample& s) { return s.p99_us; };
const Field kCpu = [](const Sample& s) { return s.server_cpu_us_per_event; };

Figures figures(const std::vector<Sample>& samples, const std::string& store, uint32_t connections) {
  std::vector<const Sample*> runs = runs_of(samples, store, connections);
  std::vector<const Sample*> base = runs_of(samples, kMemory, connections);
  Figures f;
  std::vector<double> ev = values(runs, kEvents);
  f.events_per_s = median(ev);
  f.events_min = ev.empty() ? 0 : *std::min_element(ev.begin(), ev.end());
  f.events_max = ev.empty() ? 0 : *std::max_element(ev.begin(), ev.end());
  f.p50_us = median(values(runs, kP50));
  f.p99_us = median(values(runs, kP99));
  f.cpu_us = median(values(runs, kCpu));
  f.user_us = median(values(runs, [](const Sample& s) { return s.server_user_us_per_event; }));
  f.system_us = median(values(runs, [](const Sample& s) { return s.server_system_us_per_event; }));
  f.client_cpu_us = median(values(runs, [](const Sample& s) { return s.client_cpu_us_per_event; }));
  f.batch = stats_median(runs, [](const StatsLine& l) { return l.batch; });
  f.commit_p50_us = stats_median(runs, [](const StatsLine& l) { return l.commit_p50_us; });
  f.commit_p99_us = stats_median(runs, [](const StatsLine& l) { return l.commit_p99_us; });
  f.owner_busy = stats_median(runs, [](const StatsLine& l) { return l.owner_busy; });
  f.ratio_events = ratio_median(ev, values(base, kEvents));
  f.ratio_p50 = ratio_median(values(runs, kP50), values(base, kP50));
  f.ratio_p99 = ratio_median(values(runs, kP99), values(base, kP99));
  f.ratio_cpu = ratio_median(values(runs, kCpu), values(base, kCpu));
  return f;
}

std::string json_stats(const std::vector<StatsLine>& lines) {
  std::string out = "[";
  for (size_t i = 0; i < lines.size(); ++i) {
    const StatsLine& l = lines[i];
    out += fmt::format(
        "{}{{\"events_per_s\": {:.0f}, \"batch\": {:.1f}, \"commit_p50_us\": {:.1f}, \"commit_p99_us\": {:.1f}, "
        "\"owner_busy\": {:.2f}}}",
        i ? ", " : "", l.events_per_s, l.batch, l.commit_p50_us, l.commit_p99_us, l.owner_busy);
  }
  return out + "]";
}

std::string json_run(const Sample& s) {
  return fmt::format(
      "{{\"rep\": {}, \"seconds\": {:.3f}, \"events\": {}, \"events_per_s\": {:.1f}, \"p50_us\": {:.1f}, "
      "\"p99_us\": {:.1f}, \"max_us\": {:.1f}, \"server_cpu_us_per_event\": {:.3f}, "
      "\"server_user_us_per_event\": {:.3f}, \"server_system_us_per_event\": {:.3f}, "
      "\"client_cpu_us_per_event\": {:.3f}, \"transfers_ok\": {}, \"stats\": {}}}",
      s.rep, s.seconds, s.events, s.events_per_s, s.p50_us, s.p99_us, s.max_us, s.server_cpu_us_per_event,
      s.server_user_us_per_event, s.server_system_us_per_event, s.client_cpu_us_per_event, s.transfers_ok,
      json_stats(s.stats));
}

std::string json_point(const std::vector<Sample>& samples, const std::string& store, uint32_t connections) {
  Figures f = figures(samples, store, connections);
  std::string out = fmt::format("    {{\"store\": {}, \"connections\": {},\n", json_string(store), connections);
  out += fmt::format(
      "     \"median\": {{\"events_per_s\": {:.1f}, \"p50_us\": {:.1f}, \"p99_us\": {:.1f}, "
      "\"server_cpu_us_per_event\": {:.3f}, \"server_user_us_per_event\": {:.3f}, "
      "\"server_system_us_per_event\": {:.3f}, \"client_cpu_us_per_event\": {:.3f}, \"stats_batch\": {:.1f}, "
      "\"stats_commit_p50_us\": {:.1f}, \"stats_commit_p99_us\": {:.1f}, \"stats_owner_busy\": {:.2f}}},\n",
      f.events_per_s, f.p50_us, f.p99_us, f.cpu_us, f.user_us, f.system_us, f.client_cpu_us, f.batch,
      f.commit_p50_us, f.commit_p99_us, f.owner_busy);
  out += fmt::format(
      "     \"over_memory\": {{\"events_per_s\": {:.3f}, \"p50_us\": {:.3f}, \"p99_us\": {:.3f}, "
      "\"server_cpu_us_per_event\": {:.3f}}},\n",
      f.ratio_events, f.ratio_p50, f.ratio_p99, f.ratio_cpu);
  out += "     \"runs\": [";
  std::vector<const Sample*> runs = runs_of(samples, store, connections);
  for (size_t i = 0; i < runs.size(); ++i) out += (i ? ",\n       " : "\n       ") + json_run(*runs[i]);
  return out + "]}";
}

std::string markdown_row(const std::vector<Sample>& samples, const std::string& store, uint32_t connections) {
  Figures f = figures(samples, store, connections);
  bool base = store == kMemory;
  bool memory = store.rfind(kMemory, 0) == 0;  // over any transport: nothing committed
  auto ratio = [&](double r) { return base ? std::string("–") : fmt::format("{:.2f}", r); };
  std::string commits = memory ? "–" : fmt::format("{:.0f} / {:.0f}", f.commit_p50_us, f.commit_p99_us);
  return fmt::format("| {} | {} | {} ({}–{}) | {:.0f} | {:.0f} | {:.2f} ({:.2f} + {:.2f}) | {:.2f} | {:.1f} | {} | {:.2f} | {} | {} | {} | {} |\n",
                     store, connections, grouped(static_cast<uint64_t>(f.events_per_s)),
                     grouped(static_cast<uint64_t>(f.events_min)), grouped(static_cast<uint64_t>(f.events_max)),
                     f.p50_us, f.p99_us, f.cpu_us, f.user_us, f.system_us, f.client_cpu_us, f.batch, commits,
                     f.owner_busy, ratio(f.ratio_events), ratio(f.ratio_p50), ratio(f.ratio_p99),
                     ratio(f.ratio_cpu));
}

std::string stores_text(const Options& o) {
  std::string out = "*memory* is `aup run --memory` (nothing written)";
  for (const StoreDir& d : o.stores) out += fmt::format("; *{}* is a store in a fresh directory under `{}`", d.label, d.dir);
  out += "; the load goes over a Unix socket (the line protocol)";
  if (o.transports.size() > 1 || o.transports[0] != "unix") {
    out += ", and in rows *STORE tcp* over loopback TCP (the line protocol) and *STORE http* over HTTP on "
           "loopback TCP (`POST /events/transfer`, pipelined as HTTP/1.1 allows), as listed";
  }
  return out;
}

// How the connections pace their requests.
std::string window_text(uint32_t window) {
  if (window == 1) return "each sending a request only when its previous answer has arrived (closed loop)";
  return fmt::format("each keeping {} requests outstanding (a new one is sent as an answer arrives)", window);
}

}  // namespace

std::string to_json(const Environment& env, const Options& o, const std::vector<Sample>& samples) {
  std::string out = json_opening("server", env, o.command);
  out += fmt::format("  \"aup_build\": {},\n  \"load_average_at_start\": {:.2f},\n", json_string(env.build_type),
                     env.load_average);
  out += "  \"timing\": \"own: CLOCK_MONOTONIC per request from before the write that sent it to the read that "
         "brought its answer; events answered inside the timed phase over its length; server CPU from "
         "/proc/PID/stat (utime+stime, every thread) around the timed phase\",\n";
  out += fmt::format(
      "  \"repetitions\": {},\n  \"seconds\": {},\n  \"warmup_seconds\": {},\n  \"accounts\": {},\n  \"window\": {},\n"
      "  \"io_threads\": {},\n  \"seed\": {},\n",
      o.reps, o.seconds, o.warmup, o.accounts, o.window, o.io_threads, o.seed);
  out += o.cpus ? fmt::format("  \"cpus\": {{\"client\": {}, \"server\": {}}},\n", json_string(o.cpus->client),
                              json_string(o.cpus->server))
                : std::string("  \"cpus\": null,\n");
  out += "  \"stores\": [{\"label\": \"memory\", \"dir\": null}";
  for (const StoreDir& d : o.stores) out += fmt::format(", {{\"label\": {}, \"dir\": {}}}", json_string(d.label), json_string(d.dir));
  out += "],\n  \"points\": [\n";
  std::vector<std::string> labels = store_labels(o);
  bool first = true;
  for (const std::string& store : labels) {
    for (uint32_t c : o.connections) {
      out += (first ? "" : ",\n") + json_point(samples, store, c);
      first = false;
    }
  }
  return out + "\n  ]\n}\n";
}

std::string to_markdown(const Environment& env, const Options& o, const std::vector<Sample>& samples) {
  std::string md = markdown_opening("Events over sockets: `aup run --listen`", env, o.command);
  md += fmt::format(
      "Machine: {}; aup built {}; 1-minute load average at the start {:.2f}. {}: the client's own CPU per "
      "event is in the table.\n\n",
      env.machine, env.build_type, env.load_average,
      o.cpus ? fmt::format("The server runs on CPU {} (taskset) and this client's threads on CPU {} (`--cpus {}:{}`)",
                           o.cpus->server, o.cpus->client, o.cpus->client, o.cpus->server)
             : std::string("The server and this client share the machine's CPUs"));
  md += fmt::format(
      "Load: examples/bank/bank.aup with {} accounts opened and funded, then transfers of 1 between random "
      "different accounts (each one succeeds) over a Unix socket; C connections, each on its own thread, {}. "
      "Per run: a fresh server "
      "(`aup run bank.aup --listen unix:PATH --io-threads {} --stats`), a {} s warm-up, a {} s timed phase, then "
      "the bank's `transfers_made()` and `total()` are checked against the answers, and SIGTERM must end the "
      "server with status 0. {}.\n\n",
      grouped(o.accounts), window_text(o.window), o.io_threads, o.warmup, o.seconds, stores_text(o));
  md += fmt::format(
      "Figures: events/s is the answers read in the timed phase over its length; latency is per request, "
      "from just before the write that sent it to the read that brought its answer; server CPU is utime + "
      "stime of the server process (every thread, /proc/PID/stat, 10 ms ticks) over the timed phase, per event "
      "(user + system). batch, commit and owner busy are medians of the server's own `--stats` lines within "
      "the timed phase. {} repetition{}; in each, the stores run in a rotating order; medians over "
      "repetitions; ratios are medians of the per-repetition ratios to *memory* at the same connection "
      "count.\n\n",
      o.reps, o.reps == 1 ? "" : "s");
  md += "| store | connections | events/s (min–max) | p50 µs | p99 µs | server CPU µs/event (user + sys) | "
        "client CPU µs/event | batch | commit p50 / p99 µs | owner busy | events/s ÷ memory | p50 ÷ memory | "
        "p99 ÷ memory | CPU ÷ memory |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const std::string& store : store_labels(o)) {
    for (uint32_t c : o.connections) md += markdown_row(samples, store, c);
  }
  return md;
}

}  // namespace aup::bench::server
