#include "bench/peers/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "bench/common/measure.h"

namespace aup::bench::peers {

namespace {

using Field = std::function<double(const Sample&)>;

const Field kRate = [](const Sample& s) { return s.transfers_per_s; };

std::string label(const std::string& system) {
  if (system == kAup) return "aup";
  if (system == kRedis) return "Redis";
  if (system == kTarantoolShared) return "Tarantool, one shared connection";
  if (system == kTarantoolPerClient) return "Tarantool, a connection per client";
  if (system == kFloor) return "floor (transport + group commit only)";
  if (system == kAupSync0) return "aup + 1 replica, --sync-replicas 0";
  if (system == kAupSync1) return "aup + 1 replica, --sync-replicas 1";
  return system;
}

// The runs of one system at one client count, in repetition order.
std::vector<const Sample*> runs_of(const Sweep& sweep, const std::string& system, uint32_t clients) {
  std::vector<const Sample*> out;
  for (const Sample& s : sweep.samples) {
    if (s.system == system && s.clients == clients) out.push_back(&s);
  }
  std::sort(out.begin(), out.end(), [](const Sample* a, const Sample* b) { return a->rep < b->rep; });
  return out;
}

std::vector<double> values(const std::vector<const Sample*>& runs, const Field& f) {
  std::vector<double> v;
  for (const Sample* s : runs) v.push_back(f(*s));
  return v;
}

// Per repetition, the best rate of the systems other than aup at this
// client count; empty when none ran.
std::vector<double> best_peer_rates(const Sweep& sweep, const Options& o, uint32_t clients) {
  std::vector<double> best(o.reps, 0);
  bool any = false;
  for (const std::string& system : o.systems) {
    if (system == kAup || system == kFloor || replicated(system)) continue;
    for (const Sample* s : runs_of(sweep, system, clients)) {
      best[s->rep] = std::max(best[s->rep], s->transfers_per_s);
      any = true;
    }
  }
  return any ? best : std::vector<double>{};
}

std::vector<double> sync_rates(const std::vector<SyncRate>& syncs) {
  std::vector<double> v;
  for (const SyncRate& r : syncs) v.push_back(r.syncs_per_s);
  return v;
}

struct Figures {
  double rate = 0, rate_min = 0, rate_max = 0;
  double p50_us = 0, p99_us = 0, cpu_us = 0, user_us = 0, system_us = 0, client_cpu_us = 0;
  double process_bytes = 0, device_bytes = -1;
  double over_best_peer = -1;  // aup only: medians of per-repetition ratios; -1: none
  double over_fdatasync = -1;  // aup at one client only: the CPU idle between syncs
  double over_busy_fdatasync = -1;  // and kept busy
  double over_one_node = -1;        // a replicated system: over aup alone, medians of per-repetition ratios
  double replica_cpu_us = -1, lag_p50_entries = -1, lag_max_entries = -1, lag_max_ms = -1;
};

Figures figures(const Sweep& sweep, const Options& o, const std::string& system, uint32_t clients) {
  std::vector<const Sample*> runs = runs_of(sweep, system, clients);
  std::vector<double> rates = values(runs, kRate);
  Figures f;
  f.rate = median(rates);
  f.rate_min = rates.empty() ? 0 : *std::min_element(rates.begin(), rates.end());
  f.rate_max = rates.empty() ? 0 : *std::max_element(rates.begin(), rates.end());
  f.p50_us = median(values(runs, [](const Sample& s) { return s.p50_us; }));
  f.p99_us = median(values(runs, [](const Sample& s) { return s.p99_us; }));
  f.cpu_us = median(values(runs, [](const Sample& s) { return s.server_cpu_us(); }));
  f.user_us = median(values(runs, [](const Sample& s) { return s.server_user_us; }));
  f.system_us = median(values(runs, [](const Sample& s) { return s.server_system_us; }));
  f.client_cpu_us = median(values(runs, [](const Sample& s) { return s.client_cpu_us; }));
  f.process_bytes = median(values(runs, [](const Sample& s) { return s.process_bytes; }));
  if (!sweep.device.empty()) f.device_bytes = median(values(runs, [](const Sample& s) { return s.device_bytes; }));
  if (replicated(system)) {
    std::vector<const Sample*> alone = runs_of(sweep, kAup, clients);
    if (alone.size() == runs.size()) f.over_one_node = ratio_median(rates, values(alone, kRate));
    f.replica_cpu_us = median(values(runs, [](const Sample& s) { return s.replica_cpu_us; }));
    f.lag_p50_entries = median(values(runs, [](const Sample& s) { return s.lag_p50_entries; }));
    std::vector<double> m = values(runs, [](const Sample& s) { return s.lag_max_entries; });
    std::vector<double> ms = values(runs, [](const Sample& s) { return s.lag_max_ms; });
    f.lag_max_entries = m.empty() ? 0 : *std::max_element(m.begin(), m.end());
    f.lag_max_ms = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
  }
  if (system == kAup) {
    std::vector<double> best = best_peer_rates(sweep, o, clients);
    if (!best.empty()) f.over_best_peer = ratio_median(rates, best);
    if (clients == 1) {
      f.over_fdatasync = ratio_median(rates, sync_rates(sweep.syncs));
      f.over_busy_fdatasync = ratio_median(rates, sync_rates(sweep.busy_syncs));
    }
  }
  return f;
}

std::string optional_json(double v, const char* format) {
  return v < 0 ? std::string("null") : fmt::format(fmt::runtime(format), v);
}

std::string json_run(const Sample& s) {
  return fmt::format(
      "{{\"rep\": {}, \"seconds\": {:.3f}, \"transfers\": {}, \"transfers_per_s\": {:.1f}, \"p50_us\": {:.1f}, "
      "\"p99_us\": {:.1f}, \"max_us\": {:.1f}, \"server_cpu_us_per_transfer\": {:.3f}, "
      "\"server_user_us_per_transfer\": {:.3f}, \"server_system_us_per_transfer\": {:.3f}, "
      "\"client_cpu_us_per_transfer\": {:.3f}, \"process_bytes_per_transfer\": {:.1f}, "
      "\"device_bytes_per_transfer\": {}, \"transfers_total\": {}, \"replica_cpu_us_per_transfer\": {}, "
      "\"replica_lag_p50_saves\": {}, \"replica_lag_max_saves\": {}, \"replica_lag_max_ms\": {}}}",
      s.rep, s.seconds, s.transfers, s.transfers_per_s, s.p50_us, s.p99_us, s.max_us, s.server_cpu_us(),
      s.server_user_us, s.server_system_us, s.client_cpu_us, s.process_bytes,
      optional_json(s.device_bytes, "{:.1f}"), s.transfers_total, optional_json(s.replica_cpu_us, "{:.3f}"),
      optional_json(s.lag_p50_entries, "{:.0f}"), optional_json(s.lag_max_entries, "{:.0f}"),
      optional_json(s.lag_max_ms, "{:.0f}"));
}

std::string json_point(const Sweep& sweep, const Options& o, const std::string& system, uint32_t clients) {
  Figures f = figures(sweep, o, system, clients);
  std::string out = fmt::format("    {{\"system\": {}, \"clients\": {},\n", json_string(system), clients);
  out += fmt::format(
      "     \"median\": {{\"transfers_per_s\": {:.1f}, \"transfers_per_s_min\": {:.1f}, \"transfers_per_s_max\": {:.1f}, "
      "\"p50_us\": {:.1f}, \"p99_us\": {:.1f}, \"server_cpu_us_per_transfer\": {:.3f}, "
      "\"server_user_us_per_transfer\": {:.3f}, \"server_system_us_per_transfer\": {:.3f}, "
      "\"client_cpu_us_per_transfer\": {:.3f}, \"process_bytes_per_transfer\": {:.1f}, "
      "\"device_bytes_per_transfer\": {}, \"aup_over_best_peer\": {}, \"aup_over_fdatasync\": {}, "
      "\"aup_over_fdatasync_cpu_busy\": {}, \"over_one_node\": {}, \"replica_cpu_us_per_transfer\": {}, "
      "\"replica_lag_p50_saves\": {}, \"replica_lag_max_saves\": {}, \"replica_lag_max_ms\": {}}},\n",
      f.rate, f.rate_min, f.rate_max, f.p50_us, f.p99_us, f.cpu_us, f.user_us, f.system_us, f.client_cpu_us,
      f.process_bytes, optional_json(f.device_bytes, "{:.1f}"), optional_json(f.over_best_peer, "{:.3f}"),
      optional_json(f.over_fdatasync, "{:.3f}"), optional_json(f.over_busy_fdatasync, "{:.3f}"),
      optional_json(f.over_one_node, "{:.3f}"), optional_json(f.replica_cpu_us, "{:.3f}"),
      optional_json(f.lag_p50_entries, "{:.0f}"), optional_json(f.lag_max_entries, "{:.0f}"),
      optional_json(f.lag_max_ms, "{:.0f}"));
  out += "     \"runs\": [";
  std::vector<const Sample*> runs = runs_of(sweep, system, clients);
  for (size_t i = 0; i < runs.size(); ++i) out += (i ? ",\n       " : "\n       ") + json_run(*runs[i]);
  return out + "]}";
}

std::string json_syncs(const std::vector<SyncRate>& syncs) {
  std::string out = "[";
  for (size_t i = 0; i < syncs.size(); ++i) {
    const SyncRate& r = syncs[i];
    out += fmt::format("{}\n    {{\"rep\": {}, \"seconds\": {:.3f}, \"syncs_per_s\": {:.1f}, \"p50_us\": {:.1f}, "
                       "\"p99_us\": {:.1f}, \"device_bytes_per_sync\": {}}}",
                       i ? "," : "", i, r.seconds, r.syncs_per_s, r.p50_us, r.p99_us,
                       optional_json(r.device_bytes_per_sync, "{:.1f}"));
  }
  return out + "]";
}

std::string json_list(const std::vector<std::string>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + json_string(v[i]);
  return out + "]";
}

std::string bytes_cell(double v) { return v < 0 ? "–" : grouped(static_cast<uint64_t>(v + 0.5)); }
std::string ratio_cell(double v) { return v < 0 ? "–" : fmt::format("{:.2f}", v); }

std::string markdown_row(const Sweep& sweep, const Options& o, const std::string& system, uint32_t clients) {
  Figures f = figures(sweep, o, system, clients);
  std::string over_sync = f.over_fdatasync < 0 ? "–" : ratio_cell(f.over_fdatasync) + " / " + ratio_cell(f.over_busy_fdatasync);
  return fmt::format("| {} | {} | {} ({}–{}) | {:.0f} | {:.0f} | {:.1f} ({:.1f} + {:.1f}) | {:.1f} | {} | {} | {} | {} |\n",
                     label(system), clients, grouped(static_cast<uint64_t>(f.rate)),
                     grouped(static_cast<uint64_t>(f.rate_min)), grouped(static_cast<uint64_t>(f.rate_max)), f.p50_us,
                     f.p99_us, f.cpu_us, f.user_us, f.system_us, f.client_cpu_us, bytes_cell(f.process_bytes),
                     bytes_cell(f.device_bytes), ratio_cell(f.over_best_peer), over_sync);
}

// One line of the bare fdatasync rates: `how` says what the CPU did.
std::string sync_line(const std::vector<SyncRate>& syncs, const std::string& how, bool device) {
  std::vector<double> rates = sync_rates(syncs);
  if (rates.empty()) return "";
  std::vector<double> p50, p99, bytes;
  for (const SyncRate& r : syncs) {
    p50.push_back(r.p50_us);
    p99.push_back(r.p99_us);
    bytes.push_back(r.device_bytes_per_sync);
  }
  return fmt::format("- {}: **{}/s** ({}–{}), p50 {:.0f} µs, p99 {:.0f} µs, {} bytes written by the device per sync\n",
                     how, grouped(static_cast<uint64_t>(median(rates))),
                     grouped(static_cast<uint64_t>(*std::min_element(rates.begin(), rates.end()))),
                     grouped(static_cast<uint64_t>(*std::max_element(rates.begin(), rates.end()))), median(p50),
                     median(p99), device ? bytes_cell(median(bytes)) : std::string("–"));
}

std::string sync_text(const Sweep& sweep) {
  if (sweep.syncs.empty()) return "";
  bool device = !sweep.device.empty();
  return "Bare fdatasync on the same volume (4 KiB pwrite at offset 0 + fdatasync on a preallocated file, in this "
         "program, on its CPU), the baseline of the 1-client rows:\n\n" +
         sync_line(sweep.syncs, "the CPU idle between syncs", device) +
         sync_line(sweep.busy_syncs, "the CPU kept busy by a spinning thread", device) +
         "\nBoth, because on a virtual machine an idle vCPU may hear of a finished sync only at its next timer "
         "tick, and a server whose CPU stays busy does not wait for that.\n\n";
}

std::string pinning_text(const Options& o) {
  std::string server = o.server_cpus.empty() ? "not pinned" : "pinned to CPU " + o.server_cpus + " (`taskset -c`)";
  std::string client = o.client_cpus.empty() ? "not pinned" : "pinned to CPU " + o.client_cpus;
  return "Each server " + server + ", this load generator " + client;
}

// aup with a replica beside aup alone (bench/replication): the table of
// the replicated systems, when any ran.
std::string replication_text(const Sweep& sweep, const Options& o) {
  if (std::none_of(o.systems.begin(), o.systems.end(), replicated)) return "";
  std::string md = fmt::format(
      "\n## With a replica\n\nThe same load on a primary (`--sync-replicas K`, pinned as the servers above) "
      "followed by one replica (`--replica-of`, {}), on the same volume: each batch is synced by both. ÷ one node: "
      "transfers/s over aup alone at the same client count (median of per-repetition ratios). Replica CPU: the "
      "replica's utime + stime per transfer. Lag: the replica's own replication_lag_entries (saves the primary holds "
      "that it does not) and replication_lag_seconds, sampled every 100 ms while the clients ran: the median and "
      "the largest sample over the repetitions.\n\n",
      o.replica_cpus.empty() ? std::string("not pinned") : "pinned to CPU " + o.replica_cpus);
  md += "| system | clients | transfers/s (min–max) | ÷ one node | p50 µs | p99 µs | primary CPU µs/transfer | replica "
        "CPU µs/transfer | lag p50 / max saves | lag max ms |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (uint32_t c : o.clients) {
    for (const std::string& system : o.systems) {
      if (!replicated(system) && system != kAup) continue;
      Figures f = figures(sweep, o, system, c);
      bool r = replicated(system);
      md += fmt::format("| {} | {} | {} ({}–{}) | {} | {:.0f} | {:.0f} | {:.1f} | {} | {} | {} |\n", label(system), c,
                        grouped(static_cast<uint64_t>(f.rate)), grouped(static_cast<uint64_t>(f.rate_min)),
                        grouped(static_cast<uint64_t>(f.rate_max)), r ? ratio_cell(f.over_one_node) : "1",
                        f.p50_us, f.p99_us, f.cpu_us, r ? fmt::format("{:.1f}", f.replica_cpu_us) : "–",
                        r ? fmt::format("{:.0f} / {:.0f}", f.lag_p50_entries, f.lag_max_entries) : "–",
                        r ? fmt::format("{:.0f}", f.lag_max_ms) : "–");
    }
  }
  return md;
}

}  // namespace

std::string to_json(const Environment& env, const Options& o, const Versions& v, const Sweep& sweep) {
  std::string out = json_opening("peers", env, o.command);
  out += fmt::format("  \"aup_build\": {},\n  \"load_average_at_start\": {:.2f},\n", json_string(env.build_type),
                     env.load_average);
  out += fmt::format("  \"redis_version\": {},\n  \"tarantool_version\": {},\n", json_string(v.redis),
                     json_string(v.tarantool));
  out += "  \"timing\": \"own: CLOCK_MONOTONIC per transfer from before its request was sent to the read of its "
         "answer; transfers answered inside the timed phase over its length; server CPU from /proc/PID/stat "
         "(utime+stime, every thread), process writes from /proc/PID/io write_bytes, device writes from "
         "/sys/block/DEV/stat sectors written x 512, each read at both ends of the timed phase\",\n";
  out += fmt::format(
      "  \"repetitions\": {},\n  \"seconds\": {},\n  \"warmup_seconds\": {},\n  \"sync_seconds\": {},\n"
      "  \"accounts\": {},\n  \"deposit\": {},\n  \"amount\": 1,\n  \"io_threads\": {},\n  \"server_cpus\": {},\n"
      "  \"client_cpus\": {},\n  \"seed\": {},\n  \"data\": {},\n  \"device\": {},\n",
      o.reps, o.seconds, o.warmup, o.sync_seconds, o.accounts, o.deposit,
      o.io_threads >= 0 ? std::to_string(o.io_threads) : std::string("null"), json_string(o.server_cpus),
      json_string(o.client_cpus), o.seed, json_string(o.data_shown), sweep.device.empty() ? "null" : json_string(sweep.device));
  out += fmt::format("  \"systems\": {},\n  \"skipped\": {},\n", json_list(o.systems), json_list(o.skipped));
  out += "  \"fdatasync\": " + json_syncs(sweep.syncs) + ",\n";
  out += "  \"fdatasync_cpu_busy\": " + json_syncs(sweep.busy_syncs) + ",\n  \"points\": [\n";
  bool first = true;
  for (const std::string& system : o.systems) {
    for (uint32_t c : o.clients) {
      out += (first ? "" : ",\n") + json_point(sweep, o, system, c);
      first = false;
    }
  }
  return out + "\n  ]\n}\n";
}

std::string to_markdown(const Environment& env, const Options& o, const Versions& v, const Sweep& sweep) {
  std::string md = markdown_opening("Durable transfers beside Redis and Tarantool", env, o.command);
  md += fmt::format("Machine: {}; aup built {}; {}; {}; 1-minute load average at the start {:.2f}. Data under `{}` "
                    "(block device {}).\n\n",
                    env.machine, env.build_type, v.redis.empty() ? "Redis not run" : v.redis,
                    v.tarantool.empty() ? "Tarantool not run" : v.tarantool, env.load_average, o.data_shown,
                    sweep.device.empty() ? "unknown" : sweep.device);
  for (const std::string& s : o.skipped) md += "Skipped: " + s + ".\n\n";
  md += fmt::format(
      "Load: {} accounts of {} each, then transfers of 1 between random distinct accounts over a Unix socket, "
      "C clients each on its own thread in a closed loop (a transfer, its answer, the next); every answer comes "
      "after the transfer is durable. aup: `aup run bank.aup --data DIR --listen unix:PATH{}`, the bank's "
      "`transfer` event. Redis: `appendonly yes`, `appendfsync always`, no RDB saves, the transfer a Lua script "
      "(EVALSHA) that checks then applies. Tarantool: memtx, `wal_mode = 'fsync'`, the transfer a stored function "
      "in box.begin()/box.commit(), called over IPROTO through one connection shared by all clients (sync ids) or "
      "a connection per client. The floor (`peers_floor`, not a peer): a hand-written server doing only one read and "
      "one send per request and one pwrite + fdatasync per turn, in aup's line protocol: the least any server "
      "answering each transfer on its own connection costs here. {}. Per run: a fresh server in a fresh directory, {} s warm-up, {} s timed; "
      "then the server's count of transfers and sum of balances must match the clients'. {} repetition{}, systems "
      "in a rotating order; medians, with the min–max of transfers/s.\n\n",
      grouped(o.accounts), grouped(o.deposit), o.io_threads >= 0 ? fmt::format(" --io-threads {}", o.io_threads) : "",
      pinning_text(o), o.warmup, o.seconds, o.reps, o.reps == 1 ? "" : "s");
  md += sync_text(sweep);
  md += "Server CPU is utime + stime of the server process over the timed phase (/proc/PID/stat, 10 ms ticks) per "
        "transfer; written is /proc/PID/io write_bytes of the server (process) and sectors written × 512 of the "
        "whole block device (device: everything on the machine that wrote in that time) per transfer. "
        "÷ best peer: aup's transfers/s over the best of the others at the same client count (median of "
        "per-repetition ratios); ÷ fdatasync: aup's one-client rate over the bare fdatasync rate, the CPU idle / "
        "kept busy.\n\n";
  md += "| system | clients | transfers/s (min–max) | p50 µs | p99 µs | server CPU µs/transfer (user + sys) | client CPU "
        "µs/transfer | written B/transfer: process | device | ÷ best peer | ÷ fdatasync (idle / busy) |\n";
  md += "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (uint32_t c : o.clients) {
    for (const std::string& system : o.systems) md += markdown_row(sweep, o, system, c);
  }
  return md + replication_text(sweep, o);
}

}  // namespace aup::bench::peers
