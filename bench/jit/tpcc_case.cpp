#include "bench/jit/tpcc_case.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "bench/jit/process.h"
#include "bench/server/temp_dir.h"

namespace aup::bench::jit {

namespace {

namespace fs = std::filesystem;

// The number after "KEY": in aup-tpcc's one-line JSON; throws when absent.
double number(const std::string& json, const std::string& key) {
  std::string quoted = "\"" + key + "\":";
  size_t at = json.find(quoted);
  if (at == std::string::npos) throw std::runtime_error("aup-tpcc run --json has no " + key + ": " + json);
  return std::strtod(json.c_str() + at + quoted.size(), nullptr);
}

// Regular files and directories of `from` into `to` (the server's socket,
// gone after a clean stop anyway, is not copied).
void copy_store(const fs::path& from, const fs::path& to) {
  fs::create_directories(to);
  for (const fs::directory_entry& e : fs::directory_iterator(from)) {
    fs::path target = to / e.path().filename();
    if (e.is_directory()) {
      copy_store(e.path(), target);
    } else if (e.is_regular_file()) {
      fs::copy_file(e.path(), target);
    }
  }
}

std::vector<std::string> common_args(const Options& o, const std::string& dir) {
  std::vector<std::string> args = {"--backend", "aup", "--dir", dir, "--warehouses", std::to_string(o.warehouses)};
  args.insert(args.end(), {"--aup", o.aup, "--module", o.tpcc_module, "--cpus", o.tpcc_cpus});
  return args;
}

}  // namespace

TpccResult measure_tpcc(const Options& o) {
  TpccResult r;
  server::TempDir scratch(o.tpcc_dir, "aup-jit-bench");
  const std::string tmpl = scratch.path() + "/template";
  const std::string out = scratch.path() + "/out.txt";
  const std::string err = scratch.path() + "/err.txt";

  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    for (size_t k = 0; k < 2; ++k) {
      size_t side = (k + rep) % 2;
      r.startups[side].push_back(startup_run(o, o.tpcc_module, o.sides[side], err));
    }
  }

  std::fprintf(stderr, "jit_bench: tpcc, loading W=%lld\n", static_cast<long long>(o.warehouses));
  std::vector<std::string> load = {o.tpcc, "load"};
  std::vector<std::string> common = common_args(o, tmpl);
  load.insert(load.end(), common.begin(), common.end());
  r.load_s = run_child(Child{load, "/dev/null", out, err}).wall_ns / 1e9;

  int n = 0;
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    std::fprintf(stderr, "jit_bench: tpcc, repetition %u of %u\n", rep + 1, o.reps);
    for (size_t k = 0; k < 2; ++k) {
      size_t side = (k + rep) % 2;
      const std::string dir = scratch.path() + "/run-" + std::to_string(n++);
      const std::string json = dir + ".json";
      copy_store(tmpl, dir);
      std::vector<std::string> argv = {o.tpcc, "run"};
      common = common_args(o, dir);
      argv.insert(argv.end(), common.begin(), common.end());
      argv.insert(argv.end(), {"--terminals", std::to_string(o.terminals), "--seconds", fmt::format("{}", o.seconds),
                               "--warmup", fmt::format("{}", o.warmup), "--json", json});
      std::vector<std::string> e = o.sides[side].args();
      argv.insert(argv.end(), e.begin(), e.end());
      run_child(Child{argv, "/dev/null", out, err});
      TpccRun t;
      t.json = read_text(json);
      while (!t.json.empty() && t.json.back() == '\n') t.json.pop_back();
      if (t.json.find("\"consistent\":true") == std::string::npos) {
        throw std::runtime_error(fmt::format("tpcc ({}): not consistent after the run: {}", o.sides[side].label(),
                                             t.json));
      }
      t.seconds = number(t.json, "seconds");
      t.transactions = static_cast<uint64_t>(number(t.json, "transactions"));
      t.transactions_per_s = number(t.json, "transactions_per_s");
      t.cpu_us_per_transaction = number(t.json, "cpu_us_per_transaction");
      r.runs[side].push_back(std::move(t));
      fs::remove_all(dir);
      fs::remove(json);
    }
  }
  return r;
}

}  // namespace aup::bench::jit
