// peers_bench: the same durable bank transfer on aup, Redis (AOF fsync'ed
// on every write) and Tarantool (WAL fsync'ed on every write) at 1, 16 and
// 64 closed-loop clients, each server pinned to one CPU and this load
// generator to the other, beside the bare fdatasync rate of the volume and
// the floor: a hand-written server doing only the transport and the group
// commit (floor_server.cpp), the least any of them can cost here.
// See docs/benchmarks.md, "Durable transfers beside Redis and Tarantool".
//
// Usage: peers_bench --aup PATH --bank BANK.aup --data DIR
//          [--systems aup,redis,tarantool] [--clients 1,16,64]
//          [--seconds 10] [--warmup 2] [--sync-seconds 3] [--accounts 10000]
//          [--io-threads N] [--cpus SERVER:CLIENT | none] [--replica-cpus LIST]
//          [--redis-server PATH] [--tarantool PATH] [--floor PATH]
//          [--reps 3] [--seed 92] [--out DIR] [--name peers] [--smoke]
//
// A system whose program is missing is skipped, saying which Debian
// package would bring it; nothing is installed.
// --smoke: aup and the floor at 1 and 4 clients, about 5 s in all, unpinned, in a
// temporary directory; checks the answers and totals, never speed; writes
// nothing unless --out (the meson test).
#include <sched.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/common/program.h"
#include "bench/common/report.h"
#include "bench/peers/options.h"
#include "bench/peers/report.h"
#include "bench/server/temp_dir.h"
#include "bench/peers/sweep.h"

namespace {

namespace pe = aup::bench::peers;

constexpr const char* kProgram = "peers_bench";
constexpr uint64_t kMaxCount = uint64_t{1} << 32;
// Below aup's default --max-connections (1024) and Redis's maxclients
// (10,000); Tarantool has no such limit.
constexpr uint32_t kMaxClients = 1000;

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, sep);) out.push_back(item);
  return out;
}

std::vector<uint32_t> client_counts(aup::bench::CommandLine& args, const std::string& text) {
  std::vector<uint32_t> out;
  for (const std::string& item : split(text, ',')) out.push_back(static_cast<uint32_t>(args.count(item, 1, kMaxClients)));
  if (out.empty()) args.usage("--clients needs at least one count");
  return out;
}

// "aup,redis,tarantool": tarantool stands for both of its ways of connecting.
std::vector<std::string> systems(aup::bench::CommandLine& args, const std::string& text) {
  std::vector<std::string> out;
  for (const std::string& s : split(text, ',')) {
    if (s == pe::kAup || s == pe::kRedis || s == pe::kTarantoolShared || s == pe::kTarantoolPerClient ||
        s == pe::kFloor || pe::replicated(s)) {
      out.push_back(s);
    } else if (s == "tarantool") {
      out.insert(out.end(), {pe::kTarantoolShared, pe::kTarantoolPerClient});
    } else {
      args.usage("no system `" + s +
                 "` (aup, redis, tarantool, tarantool-shared, tarantool-per-client, floor, aup-k0, aup-k1)");
    }
  }
  if (out.empty()) args.usage("--systems needs at least one system");
  return out;
}

double seconds_value(aup::bench::CommandLine& args) {
  std::string text = args.value();
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 3600) {
    args.usage("bad number of seconds: `" + text + "`");
  }
  return v;
}

// "0:1" -> server on CPU list 0, this program on 1; "none": neither pinned.
void cpu_plan(aup::bench::CommandLine& args, pe::Options& o) {
  std::string text = args.value();
  if (text == "none") {
    o.server_cpus.clear();
    o.client_cpus.clear();
    o.replica_cpus.clear();
    return;
  }
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) {
    args.usage("--cpus needs SERVER:CLIENT (CPU numbers, as `0:1`) or `none`, not `" + text + "`");
  }
  o.server_cpus = text.substr(0, colon);
  o.client_cpus = text.substr(colon + 1);
  o.replica_cpus = o.client_cpus;
}

// The smoke test's shape: aup and the floor, short, unpinned (meson runs tests in
// parallel on any number of CPUs); its data directory is made when it runs.
void smoke_shape(pe::Options& o) {
  o.smoke = true;
  o.systems = {pe::kAup, pe::kFloor};
  o.clients = {1, 4};
  o.reps = 1;
  o.seconds = 0.8;
  o.warmup = 0.3;
  o.sync_seconds = 0.3;
  o.accounts = 100;
  o.server_cpus.clear();
  o.client_cpus.clear();
  o.replica_cpus.clear();
}

bool own_flag(aup::bench::CommandLine& args, pe::Options& o, const std::string& a) {
  if (a == "--smoke") smoke_shape(o);
  else if (a == "--aup") o.aup = args.value();
  else if (a == "--bank") o.bank = args.value();
  else if (a == "--data") o.data = args.value();
  else if (a == "--redis-server") o.redis_server = args.value();
  else if (a == "--tarantool") o.tarantool = args.value();
  else if (a == "--floor") o.floor = args.value();
  else if (a == "--systems") o.systems = systems(args, args.value());
  else if (a == "--clients") o.clients = client_counts(args, args.value());
  else if (a == "--seconds") o.seconds = seconds_value(args);
  else if (a == "--warmup") o.warmup = seconds_value(args);
  else if (a == "--sync-seconds") o.sync_seconds = seconds_value(args);
  else if (a == "--accounts") o.accounts = static_cast<uint32_t>(args.count_value(2, 10000000));
  else if (a == "--io-threads") o.io_threads = static_cast<int>(args.count_value(0, 64));
  else if (a == "--cpus") cpu_plan(args, o);
  else if (a == "--replica-cpus") o.replica_cpus = args.value();
  else if (a == "--name") {
    o.name = args.value();
    if (o.name.empty() || o.name.find('/') != std::string::npos) args.usage("--name needs a plain file name");
  } else {
    return false;
  }
  return true;
}

pe::Options parse_args(int argc, char** argv) {
  aup::bench::CommandLine args(argc, argv, kProgram,
                               "--aup PATH --bank BANK.aup --data DIR [--systems aup,redis,tarantool] "
                               "[--clients 1,16,64] [--seconds S] [--warmup S] [--sync-seconds S] [--accounts N] "
                               "[--io-threads N] [--cpus SERVER:CLIENT|none] [--replica-cpus LIST] [--redis-server PATH] "
                               "[--tarantool PATH] [--floor PATH] [--reps N] [--seed N] [--out DIR] [--name NAME] [--smoke]");
  pe::Options o;
  args.parse(o, 1, kMaxCount, [&](const std::string& a) { return own_flag(args, o, a); });
  if (o.aup.empty() || o.bank.empty()) args.usage("--aup and --bank are required");
  if (o.data.empty() && !o.smoke) args.usage("--data DIR is required: the volume to measure");
  if (o.floor.empty()) {
    // Built beside this program.
    o.floor = (std::filesystem::read_symlink("/proc/self/exe").parent_path() / "peers_floor").string();
  }
  return o;
}

// Drops the systems whose program is missing, saying so; installs nothing.
void skip_missing(pe::Options& o) {
  std::vector<std::string> kept;
  for (const std::string& s : o.systems) {
    bool redis = s == pe::kRedis, floor = s == pe::kFloor;
    const std::string& program = redis ? o.redis_server : floor ? o.floor : o.tarantool;
    if (s == pe::kAup || pe::replicated(s) || ::access(program.c_str(), X_OK) == 0) {
      kept.push_back(s);
      continue;
    }
    std::string why = s + ": " + program + " is missing (" +
                      (floor  ? std::string("build it: ninja bench/peers/peers_floor")
                       : redis ? std::string("the Debian package redis-server is not installed")
                               : std::string("the Debian package tarantool is not installed")) +
                      ")";
    std::fprintf(stderr, "%s: skipping %s\n", kProgram, why.c_str());
    o.skipped.push_back(why);
  }
  o.systems = kept;
}

// The first line `PROGRAM --version` prints; empty when it prints nothing.
std::string version_of(const std::string& program) {
  std::string command = "'" + program + "' --version 2>/dev/null";
  FILE* p = ::popen(command.c_str(), "r");
  if (!p) return "";
  char line[256] = {0};
  if (!std::fgets(line, sizeof line, p)) line[0] = '\0';
  ::pclose(p);
  std::string text = line;
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

pe::Versions versions(const pe::Options& o) {
  pe::Versions v;
  for (const std::string& s : o.systems) {
    if (s == pe::kRedis) v.redis = version_of(o.redis_server);
    if (s == pe::kTarantoolShared || s == pe::kTarantoolPerClient) v.tarantool = version_of(o.tarantool);
  }
  return v;
}

// Pins this thread, and so every client thread started later, to `list`
// ("1", "0,2", "1-3").
void pin_self(const std::string& list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (const std::string& part : split(list, ',')) {
    size_t dash = part.find('-');
    int first = std::stoi(part.substr(0, dash));
    int last = dash == std::string::npos ? first : std::stoi(part.substr(dash + 1));
    for (int cpu = first; cpu <= last; ++cpu) CPU_SET(cpu, &set);
  }
  if (::sched_setaffinity(0, sizeof set, &set) != 0) throw std::runtime_error("cannot pin this program to CPUs " + list);
}

// The smoke check: every run made transfers (that each was made and the
// totals agree was checked as it ran).
bool transferred(const pe::Sweep& sweep, const pe::Options& o) {
  if (sweep.samples.size() != o.reps * o.clients.size() * o.systems.size()) return false;
  for (const pe::Sample& s : sweep.samples) {
    if (s.transfers_total == 0) return false;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  pe::Options o = parse_args(argc, argv);
  return aup::bench::run_benchmark(kProgram, [&] {
    skip_missing(o);
    if (!o.client_cpus.empty()) pin_self(o.client_cpus);
    aup::bench::Environment env = aup::bench::environment();
    pe::Versions v = versions(o);
    const char* tmp = std::getenv("TMPDIR");
    aup::bench::server::TempDir scratch(tmp && *tmp ? tmp : "/tmp", "aup-peers");  // the smoke test's data
    if (o.data.empty()) o.data = scratch.path();
    std::filesystem::create_directories(o.data);
    // Absolute: redis-server and tarantool change to their data directory
    // before they open their sockets.
    o.data_shown = o.data;
    o.data = std::filesystem::canonical(o.data).string();
    pe::Sweep sweep = pe::run_all(o);
    aup::bench::publish(o.out_dir, o.name, pe::to_json(env, o, v, sweep), pe::to_markdown(env, o, v, sweep));
    if (o.smoke && !transferred(sweep, o)) return aup::bench::smoke_failure(kProgram);
    return 0;
  });
}
