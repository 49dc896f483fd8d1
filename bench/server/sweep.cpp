#include "bench/server/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <stdexcept>

#include "bench/server/client.h"
#include "bench/server/load.h"
#include "bench/server/temp_dir.h"

namespace aup::bench::server {

namespace {

// Each account's deposit: a run makes at most a few million transfers of 1
// spread over the accounts, so none runs short and every transfer succeeds.
constexpr uint64_t kDeposit = 1000000;

// The bank after the load must hold what the answers said: one transfer
// made per ok answer, and the money deposited, no more, no less.
void check_totals(const BankTotals& t, const LoadResult& r, const Options& o) {
  double deposited = static_cast<double>(o.accounts) * static_cast<double>(kDeposit);
  if (t.transfers_made != static_cast<double>(r.ok_total) || t.total != deposited ||
      t.accounts != static_cast<double>(o.accounts)) {
    throw std::runtime_error(fmt::format(
        "the bank disagrees with the answers: transfers_made {} for {} ok answers; total {} over {} accounts, "
        "expected {} over {}",
        t.transfers_made, r.ok_total, t.total, t.accounts, deposited, o.accounts));
  }
}

Sample to_sample(const std::string& store, uint32_t connections, uint32_t rep, const LoadResult& r) {
  Sample s;
  s.store = store;
  s.connections = connections;
  s.rep = rep;
  s.seconds = (r.end_ns - r.start_ns) / 1e9;
  s.events = r.events;
  double events = static_cast<double>(std::max<uint64_t>(r.events, 1));
  s.events_per_s = static_cast<double>(r.events) / s.seconds;
  s.p50_us = r.p50_us;
  s.p99_us = r.p99_us;
  s.max_us = r.max_us;
  s.server_user_us_per_event = (r.server_after.user_ns - r.server_before.user_ns) / 1e3 / events;
  s.server_system_us_per_event = (r.server_after.system_ns - r.server_before.system_ns) / 1e3 / events;
  s.server_cpu_us_per_event = s.server_user_us_per_event + s.server_system_us_per_event;
  s.client_cpu_us_per_event = r.client_cpu_ns / 1e3 / events;
  s.transfers_ok = r.ok_total;
  return s;
}

// What one row of the report runs: a store over a transport.
struct Kind {
  std::string label;      // the row's name
  std::string dir;        // the store's directory; empty: --memory
  std::string transport;  // "unix", "tcp", "http"
};

std::vector<Kind> kinds(const Options& o) {
  std::vector<Kind> out;
  std::vector<std::pair<std::string, std::string>> stores{{kMemory, ""}};
  for (const StoreDir& d : o.stores) stores.emplace_back(d.label, d.dir);
  for (const auto& [label, dir] : stores) {
    for (const std::string& t : o.transports) out.push_back(Kind{t == "unix" ? label : label + " " + t, dir, t});
  }
  return out;
}

// One run: a fresh server (and store, when `dir` is set), its load, checks.
// The set-up and the final check go over the Unix socket, the load over
// the run's transport.
Sample run_one(const Options& o, const Kind& kind, uint32_t connections, uint32_t rep, const std::string& work_dir) {
  const std::string& label = kind.label;
  std::optional<TempDir> run_dir;  // a fresh store for every run
  if (!kind.dir.empty()) run_dir.emplace(kind.dir, "aup-server-bench");
  ServerConfig config{o.aup, o.bank, work_dir + "/server.sock", run_dir ? run_dir->path() + "/store" : "",
                      o.io_threads};
  if (o.cpus) config.cpus = o.cpus->server;
  config.tcp = kind.transport == "tcp";
  config.http = kind.transport == "http";
  ServerProcess server(config);
  open_accounts(config.socket, o.accounts, kDeposit);
  LoadSpec spec{config.socket, connections, o.window, o.accounts, o.seed + rep, o.warmup, o.seconds};
  spec.http = config.http;
  if (config.tcp || config.http) spec.port = server.port(config.http ? "http://" : "");
  LoadResult r = run_load(spec, server);
  if (r.failed_total) {
    throw std::runtime_error(fmt::format("{} of {} transfers failed ({}, {} connections); the first answer: {}",
                                         r.failed_total, r.failed_total + r.ok_total, label, connections,
                                         r.first_failure));
  }
  check_totals(read_totals(config.socket), r, o);
  server.stop();
  Sample s = to_sample(label, connections, rep, r);
  // A --stats line covers the second before it: those printed from one
  // second into the phase to its end cover the phase only.
  s.stats = server.stats_between(r.start_ns + 1e9, r.end_ns);
  return s;
}

void progress(const Sample& s) {
  std::fprintf(stderr, "server_bench: rep %u, %-6s %2u connections: %9.0f events/s, p50 %7.1f us, p99 %8.1f us, "
               "server CPU %.2f us/event\n",
               s.rep + 1, s.store.c_str(), s.connections, s.events_per_s, s.p50_us, s.p99_us,
               s.server_cpu_us_per_event);
}

}  // namespace

std::vector<std::string> store_labels(const Options& o) {
  std::vector<std::string> labels;
  for (const Kind& k : kinds(o)) labels.push_back(k.label);
  return labels;
}

std::vector<Sample> run_all(const Options& o, const std::string& work_dir) {
  std::vector<Kind> all = kinds(o);
  std::vector<Sample> samples;
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    for (uint32_t connections : o.connections) {
      for (size_t k = 0; k < all.size(); ++k) {
        size_t at = (k + rep) % all.size();  // rotate the order each repetition
        samples.push_back(run_one(o, all[at], connections, rep, work_dir));
        progress(samples.back());
      }
    }
  }
  return samples;
}

}  // namespace aup::bench::server
