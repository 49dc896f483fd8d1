#include "bench/peers/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "bench/peers/load.h"
#include "bench/server/temp_dir.h"

namespace aup::bench::peers {

namespace {

using server::TempDir;

std::unique_ptr<Peer> start(const Options& o, const std::string& system, const PeerSetup& setup) {
  if (system == kAup) return start_aup(AupConfig{o.aup, o.bank, o.io_threads}, setup);
  if (system == kRedis) return start_redis(o.redis_server, setup);
  if (system == kTarantoolShared) return start_tarantool(o.tarantool, true, setup);
  if (system == kTarantoolPerClient) return start_tarantool(o.tarantool, false, setup);
  if (system == kFloor) return start_floor(o.floor, o.accounts, o.deposit, setup);
  if (replicated(system)) {
    return start_aup_replicated(AupConfig{o.aup, o.bank, o.io_threads}, system == kAupSync1 ? 1 : 0, o.replica_cpus,
                                setup);
  }
  throw std::logic_error("no system " + system);
}

// The server must hold what the clients were told: one transfer counted per
// one made, and the money deposited, no more, no less.
void check_totals(const std::string& system, const Totals& t, const LoadResult& r, const Options& o) {
  double deposited = static_cast<double>(o.accounts) * static_cast<double>(o.deposit);
  if (t.transfers != static_cast<double>(r.ok_total) || t.sum != deposited ||
      t.accounts != static_cast<double>(o.accounts)) {
    throw std::runtime_error(fmt::format(
        "{} disagrees with its clients: {} transfers counted for {} made; a sum of {} over {} accounts, expected {} "
        "over {}",
        system, t.transfers, r.ok_total, t.sum, t.accounts, deposited, o.accounts));
  }
}

// A replicated system's replica: its CPU per transfer and its lag.
void replica_figures(Sample& s, const LoadResult& r, const std::vector<LagSample>& lag) {
  double n = static_cast<double>(std::max<uint64_t>(r.transfers, 1));
  s.replica_cpu_us = (r.after.replica_cpu.user_ns + r.after.replica_cpu.system_ns - r.before.replica_cpu.user_ns -
                      r.before.replica_cpu.system_ns) /
                     1e3 / n;
  std::vector<double> entries;
  s.lag_max_entries = s.lag_max_ms = 0;
  for (const LagSample& l : lag) {
    entries.push_back(l.entries);
    s.lag_max_entries = std::max(s.lag_max_entries, l.entries);
    s.lag_max_ms = std::max(s.lag_max_ms, l.seconds * 1000);
  }
  std::sort(entries.begin(), entries.end());
  s.lag_p50_entries = entries.empty() ? 0 : entries[entries.size() / 2];
}

Sample to_sample(const std::string& system, uint32_t clients, uint32_t rep, const LoadResult& r) {
  Sample s{system, clients, rep};
  s.seconds = (r.after.at_ns - r.before.at_ns) / 1e9;
  s.transfers = r.transfers;
  s.transfers_per_s = static_cast<double>(r.transfers) / s.seconds;
  s.p50_us = r.p50_us;
  s.p99_us = r.p99_us;
  s.max_us = r.max_us;
  double n = static_cast<double>(std::max<uint64_t>(r.transfers, 1));
  s.server_user_us = (r.after.server_cpu.user_ns - r.before.server_cpu.user_ns) / 1e3 / n;
  s.server_system_us = (r.after.server_cpu.system_ns - r.before.server_cpu.system_ns) / 1e3 / n;
  s.client_cpu_us = (r.after.client_cpu_ns - r.before.client_cpu_ns) / 1e3 / n;
  s.process_bytes = static_cast<double>(r.after.server_write_bytes - r.before.server_write_bytes) / n;
  if (r.before.device_bytes && r.after.device_bytes) s.device_bytes = (*r.after.device_bytes - *r.before.device_bytes) / n;
  s.transfers_total = r.ok_total;
  return s;
}

// One run: a fresh server in a fresh directory, its load, its checks.
Sample run_one(const Options& o, const std::string& system, uint32_t clients, uint32_t rep, const BlockDevice& device) {
  TempDir dir(o.data, "peers");
  std::unique_ptr<Peer> peer = start(o, system, PeerSetup{dir.path(), o.server_cpus});
  peer->fund(o.accounts, o.deposit);
  LoadSpec spec{clients, o.accounts, 1, o.seed + rep, o.warmup, o.seconds};
  LoadResult r = run_load(spec, *peer, device);
  if (r.failed_total) {
    throw std::runtime_error(fmt::format("{}: {} of {} transfers were refused ({} clients); the first: {}", system,
                                         r.failed_total, r.failed_total + r.ok_total, clients, r.first_failure));
  }
  check_totals(system, peer->totals(), r, o);
  Sample s = to_sample(system, clients, rep, r);
  if (peer->replica()) replica_figures(s, r, peer->lag());
  peer->stop();
  return s;
}

void progress(const Sample& s) {
  std::fprintf(stderr,
               "peers_bench: rep %u, %-20s %2u clients: %8.0f transfers/s, p50 %7.1f us, p99 %8.1f us, "
               "server CPU %6.1f us, written %6.0f B (process) %6.0f B (device) per transfer%s\n",
               s.rep + 1, s.system.c_str(), s.clients, s.transfers_per_s, s.p50_us, s.p99_us, s.server_cpu_us(),
               s.process_bytes, s.device_bytes,
               s.replica_cpu_us < 0 ? ""
                                    : fmt::format("; replica CPU {:.1f} us, lag p50 {:.0f} max {:.0f} saves, max {:.0f} ms",
                                                  s.replica_cpu_us, s.lag_p50_entries, s.lag_max_entries, s.lag_max_ms)
                                          .c_str());
}

SyncRate sync_rate(const Options& o, const BlockDevice& device, bool keep_cpu_busy) {
  TempDir dir(o.data, "fdatasync");
  SyncRate r = measure_fdatasync(dir.path(), o.sync_seconds, device, keep_cpu_busy);
  std::fprintf(stderr, "peers_bench: bare fdatasync (CPU %s): %.0f/s, p50 %.1f us, p99 %.1f us, device %.0f B per sync\n",
               keep_cpu_busy ? "busy" : "idle", r.syncs_per_s, r.p50_us, r.p99_us, r.device_bytes_per_sync);
  return r;
}

}  // namespace

Sweep run_all(const Options& o) {
  BlockDevice device(o.data);
  Sweep sweep;
  sweep.device = device.name();
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    sweep.syncs.push_back(sync_rate(o, device, false));
    sweep.busy_syncs.push_back(sync_rate(o, device, true));
    for (uint32_t clients : o.clients) {
      for (size_t k = 0; k < o.systems.size(); ++k) {
        const std::string& system = o.systems[(k + rep) % o.systems.size()];  // rotate the order each repetition
        sweep.samples.push_back(run_one(o, system, clients, rep, device));
        progress(sweep.samples.back());
      }
    }
  }
  return sweep;
}

}  // namespace aup::bench::peers
