// server_bench: events per second and per-request latency through
// `aup run --listen` (the socket server) at 1, 16 and 64 connections, on
// durable stores against the in-memory server in the same run, with the
// server's CPU per event. See docs/benchmarks.md, "Events over sockets".
//
// Usage: server_bench --aup PATH --bank BANK.aup --store LABEL=DIR...
//          [--connections 1,16,64] [--seconds 5] [--warmup 1]
//          [--accounts 10000] [--window 64] [--io-threads 2]
//          [--transports unix,tcp,http] [--cpus CLIENT:SERVER] [--reps 3] [--seed 92] [--out DIR]
//          [--name server] [--smoke]
//
// --transports (default unix): how the load reaches the server: the line
// protocol on a Unix socket, on loopback TCP, or HTTP (POST
// /events/transfer, as many outstanding as --window: pipelined, or with
// --window 1 closed loop). Each store runs over each; rows of tcp and http
// are "STORE tcp" and "STORE http", their ratios to memory over unix.
//
// --cpus CLIENT:SERVER ("0:1"; `auto` is 0:1 on two or more CPUs, `none`
// the default): the clients on CLIENT, the server under taskset on SERVER.
// For the owner serving (--io-threads 0); with I/O threads the server
// wants more than one CPU.
//
// --store LABEL=DIR (repeatable): a durable store; every run makes a fresh
// directory inside DIR and removes it afterwards.
// --smoke: 1 and 4 connections, under a second a run, one repetition,
// memory and one store in a temporary directory, over each transport; checks the answers only
// (every transfer ok, the bank's totals agree), never timings; writes
// nothing unless --out (the meson test).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/common/program.h"
#include "bench/common/report.h"
#include "bench/server/options.h"
#include "bench/server/report.h"
#include "bench/server/sweep.h"
#include "bench/server/temp_dir.h"

namespace {

namespace sv = aup::bench::server;

constexpr const char* kProgram = "server_bench";
constexpr uint64_t kMaxCount = uint64_t{1} << 32;
constexpr uint32_t kMaxConnections = 1000;  // below the server's default --max-connections (1024)

// "1,16,64" -> {1, 16, 64}.
std::vector<uint32_t> connection_counts(aup::bench::CommandLine& args, const std::string& text) {
  std::vector<uint32_t> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    out.push_back(static_cast<uint32_t>(args.count(item, 1, kMaxConnections)));
  }
  if (out.empty()) args.usage("--connections needs at least one count");
  return out;
}

// A duration in seconds: a positive finite number.
double seconds_value(aup::bench::CommandLine& args) {
  std::string text = args.value();
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 3600) {
    args.usage("bad number of seconds: `" + text + "`");
  }
  return v;
}

sv::StoreDir store_dir(aup::bench::CommandLine& args) {
  std::string text = args.value();
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size() || text.substr(0, eq) == sv::kMemory) {
    args.usage("--store needs LABEL=DIR (a label other than `memory`), not `" + text + "`");
  }
  return sv::StoreDir{text.substr(0, eq), text.substr(eq + 1)};
}

// The smoke test's shape; its store's directory is made when it runs.
void smoke_shape(sv::Options& o) {
  o.smoke = true;
  o.connections = {1, 4};
  o.reps = 1;
  o.seconds = 0.5;
  o.warmup = 0.2;
  o.accounts = 100;
  o.transports = {"unix", "tcp", "http"};
}

// --transports unix,tcp,http: each at most once.
std::vector<std::string> transports(aup::bench::CommandLine& args, const std::string& text) {
  std::vector<std::string> out;
  for (size_t at = 0; at <= text.size();) {
    size_t comma = std::min(text.find(',', at), text.size());
    std::string t = text.substr(at, comma - at);
    if ((t != "unix" && t != "tcp" && t != "http") || std::find(out.begin(), out.end(), t) != out.end()) {
      args.usage("--transports takes unix, tcp and http, each at most once, separated by commas");
    }
    out.push_back(t);
    at = comma + 1;
  }
  // The ratios of every row are to *memory* over the Unix socket.
  if (std::find(out.begin(), out.end(), "unix") == out.end()) args.usage("--transports must include unix");
  return out;
}

sv::Options parse_args(int argc, char** argv) {
  aup::bench::CommandLine args(argc, argv, kProgram,
                               "--aup PATH --bank BANK.aup --store LABEL=DIR... [--connections 1,16,64] "
                               "[--seconds S] [--warmup S] [--accounts N] [--window N] [--io-threads N] "
                               "[--transports unix,tcp,http] [--cpus CLIENT:SERVER] [--reps N] [--seed N] [--out DIR] [--name NAME] "
                               "[--smoke]");
  sv::Options o;
  args.parse(o, 1, kMaxCount, [&](const std::string& a) {
    if (a == "--smoke") {
      smoke_shape(o);
    } else if (a == "--aup") {
      o.aup = args.value();
    } else if (a == "--bank") {
      o.bank = args.value();
    } else if (a == "--store") {
      o.stores.push_back(store_dir(args));
    } else if (a == "--connections") {
      o.connections = connection_counts(args, args.value());
    } else if (a == "--seconds") {
      o.seconds = seconds_value(args);
    } else if (a == "--warmup") {
      o.warmup = seconds_value(args);
    } else if (a == "--accounts") {
      o.accounts = static_cast<uint32_t>(args.count_value(2, 10000000));
    } else if (a == "--window") {
      o.window = static_cast<uint32_t>(args.count_value(1, 1000));  // below the server's --max-pending
    } else if (a == "--name") {
      o.name = args.value();
      if (o.name.empty() || o.name.find('/') != std::string::npos) args.usage("--name needs a plain file name");
    } else if (a == "--transports") {
      o.transports = transports(args, args.value());
    } else if (a == "--cpus") {
      try {
        o.cpus = aup::bench::parse_cpu_plan(args.value());
      } catch (const std::invalid_argument& e) {
        args.usage(e.what());
      }
    } else if (a == "--io-threads") {
      o.io_threads = static_cast<uint32_t>(args.count_value(0, 64));
    } else {
      return false;
    }
    return true;
  });
  if (o.aup.empty() || o.bank.empty()) args.usage("--aup and --bank are required");
  if (o.stores.empty() && !o.smoke) args.usage("at least one --store LABEL=DIR is required");
  return o;
}

// The smoke check: every run answered transfers (each one ok and the
// totals right were checked as it ran).
bool answered(const std::vector<sv::Sample>& samples, const sv::Options& o) {
  if (samples.size() != o.reps * o.connections.size() * (o.stores.size() + 1) * o.transports.size()) return false;
  for (const sv::Sample& s : samples) {
    if (s.transfers_ok == 0) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  sv::Options o = parse_args(argc, argv);
  return aup::bench::run_benchmark(kProgram, [&] {
    aup::bench::Environment env = aup::bench::environment();
    const char* tmp = std::getenv("TMPDIR");
    sv::TempDir work(tmp && *tmp ? tmp : "/tmp", "aup-server");  // sockets, and the smoke test's store
    if (o.smoke && o.stores.empty()) o.stores.push_back(sv::StoreDir{"durable", work.path() + "/stores"});
    if (o.cpus) aup::bench::pin_this_thread(o.cpus->client);  // before any client thread starts
    std::vector<sv::Sample> samples = sv::run_all(o, work.path());
    aup::bench::publish(o.out_dir, o.name, sv::to_json(env, o, samples), sv::to_markdown(env, o, samples));
    if (o.smoke && !answered(samples, o)) return aup::bench::smoke_failure(kProgram);
    return 0;
  });
}
