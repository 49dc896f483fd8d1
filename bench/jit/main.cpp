// jit_bench: the JIT against the VM in one run: `aup run --engine jit`
// against `aup run --engine vm` on a compute-heavy module, a table-heavy
// module, TPC-C's transactions on aup's stdin (tpcc-pipe, the owner path
// alone) and TPC-C over sockets (aup-tpcc), CPU per event and per
// transaction, with the ratios. See bench/jit/run.sh.
//
// Usage: jit_bench --aup PATH --compute COMPUTE.aup --tables TABLES.aup
//          --tpcc AUP_TPCC [--tpcc-gen AUP_TPCC_GEN] --tpcc-module TPCC.aup
//          [--engines vm,jit] [--cases compute,tables,tpcc-pipe,tpcc] [--quick]
//          [--events N] [--rounds N] [--items N] [--touches N] [--width N]
//          [--pipe-transactions N] [--warehouses W] [--terminals N] [--seconds S] [--warmup S]
//          [--tpcc-dir DIR] [--tpcc-cpus auto|none|C:S] [--reps 3] [--seed 92] [--out DIR]
//
// --tpcc-gen: aup-tpcc-gen, by default the one beside --tpcc (the build
// puts them in one directory).
//
// --engines A,B: the two sides, each an engine name or `-` for no --engine
// flag (aup's own default); every ratio is B ÷ A.
// --quick: a few seconds (tiny inputs, 2,000 piped TPC-C transactions,
// one repetition, 1 s of TPC-C per side); checks the answers and that
// every figure is a positive number, never how fast anything is (the meson
// test).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/jit/cases.h"
#include "bench/common/program.h"
#include "bench/common/report.h"
#include "bench/jit/options.h"
#include "bench/jit/process.h"
#include "bench/jit/report.h"
#include "bench/server/temp_dir.h"
#include "bench/jit/tpcc_pipe.h"

namespace {

namespace jb = aup::bench::jit;

constexpr const char* kProgram = "jit_bench";
constexpr uint64_t kMaxCount = uint64_t{1} << 40;

// A duration in seconds: a finite number in [min, 3600].
double seconds_value(aup::bench::CommandLine& args, double min) {
  std::string text = args.value();
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !std::isfinite(v) || v < min || v > 3600) {
    args.usage("bad number of seconds: `" + text + "`");
  }
  return v;
}

std::vector<std::string> split(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// The program `name` in the directory of the program `path`; just `name`
// (looked up in PATH) when `path` has no directory either.
std::string beside(const std::string& path, const std::string& name) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  return dir.empty() ? name : (dir / name).string();
}

jb::Options parse_args(int argc, char** argv) {
  aup::bench::CommandLine args(
      argc, argv, kProgram,
      "--aup PATH --compute COMPUTE.aup --tables TABLES.aup --tpcc AUP_TPCC [--tpcc-gen AUP_TPCC_GEN] "
      "--tpcc-module TPCC.aup [--engines A,B] [--cases compute,tables,tpcc-pipe,tpcc] [--quick] [--events N] "
      "[--rounds N] [--items N] [--touches N] [--width N] [--pipe-transactions N] [--warehouses W] "
      "[--terminals N] [--seconds S] [--warmup S] [--tpcc-dir DIR] [--tpcc-cpus CPUS] [--reps N] [--seed N] "
      "[--out DIR]");
  jb::Options o;
  o.reps = 3;
  args.parse(o, 0, kMaxCount, [&](const std::string& a) {
    if (a == "--quick") {
      o.quick = true;
      o.reps = 1;
      o.compute_events = 20;
      o.rounds = 5000;
      o.items = 1000;
      o.touches = 5000;
      o.pipe_transactions = 2000;
      o.terminals = 4;
      o.seconds = 1;
      o.warmup = 0.3;
    } else if (a == "--aup") {
      o.aup = args.value();
    } else if (a == "--tpcc") {
      o.tpcc = args.value();
    } else if (a == "--tpcc-gen") {
      o.tpcc_gen = args.value();
    } else if (a == "--compute") {
      o.compute = args.value();
    } else if (a == "--tables") {
      o.tables = args.value();
    } else if (a == "--engines") {
      std::vector<std::string> e = split(args.value());
      if (e.size() != 2) args.usage("--engines needs two engines, A,B (`-` for aup's default)");
      for (size_t i = 0; i < 2; ++i) o.sides[i].engine = e[i] == "-" ? "" : e[i];
    } else if (a == "--cases") {
      o.run_compute = o.run_tables = o.run_tpcc_pipe = o.run_tpcc = false;
      for (const std::string& c : split(args.value())) {
        if (c == "compute") {
          o.run_compute = true;
        } else if (c == "tables") {
          o.run_tables = true;
        } else if (c == "tpcc-pipe") {
          o.run_tpcc_pipe = true;
        } else if (c == "tpcc") {
          o.run_tpcc = true;
        } else {
          args.usage("unknown case `" + c + "` (compute, tables, tpcc-pipe, tpcc)");
        }
      }
    } else if (a == "--events") {
      o.compute_events = args.count_value(1, kMaxCount);
    } else if (a == "--rounds") {
      o.rounds = args.count_value(1, kMaxCount);
    } else if (a == "--items") {
      o.items = args.count_value(1, kMaxCount);
    } else if (a == "--touches") {
      o.touches = args.count_value(1, kMaxCount);
    } else if (a == "--width") {
      o.width = args.count_value(1, 1000);
    } else if (a == "--pipe-transactions") {
      o.pipe_transactions = args.count_value(1, kMaxCount);
    } else if (a == "--warehouses") {
      o.warehouses = static_cast<int64_t>(args.count_value(1, 100));
    } else if (a == "--terminals") {
      o.terminals = static_cast<uint32_t>(args.count_value(1, 1000));
    } else if (a == "--seconds") {
      o.seconds = seconds_value(args, 0.1);
    } else if (a == "--warmup") {
      o.warmup = seconds_value(args, 0);
    } else if (a == "--tpcc-module") {
      o.tpcc_module = args.value();
    } else if (a == "--tpcc-dir") {
      o.tpcc_dir = args.value();
    } else if (a == "--tpcc-cpus") {
      o.tpcc_cpus = args.value();
    } else {
      return false;
    }
    return true;
  });
  if (o.aup.empty()) args.usage("--aup is required");
  if (o.run_compute && o.compute.empty()) args.usage("--compute is required for the compute case");
  if (o.run_tables && o.tables.empty()) args.usage("--tables is required for the tables case");
  if (o.run_tpcc && (o.tpcc.empty() || o.tpcc_module.empty())) {
    args.usage("--tpcc and --tpcc-module are required for the tpcc case");
  }
  if (o.tpcc_gen.empty() && !o.tpcc.empty()) o.tpcc_gen = beside(o.tpcc, "aup-tpcc-gen");
  if (o.run_tpcc_pipe && (o.tpcc_gen.empty() || o.tpcc_module.empty())) {
    args.usage("--tpcc-gen (or --tpcc) and --tpcc-module are required for the tpcc-pipe case");
  }
  if (o.reps == 0) args.usage("--reps must be positive");
  return o;
}

std::string temp_parent() {
  const char* base = std::getenv("TMPDIR");
  return base && *base ? base : "/tmp";
}

}  // namespace

int main(int argc, char** argv) {
  jb::Options o = parse_args(argc, argv);
  return aup::bench::run_benchmark(kProgram, [&] {
    aup::bench::Environment env = aup::bench::environment();
    aup::bench::server::TempDir dir(temp_parent(), "aup-jit-bench");
    jb::Results r;
    if (o.run_compute) r.events.push_back(jb::measure_events(o, jb::make_compute(dir.path(), o)));
    if (o.run_tables) r.events.push_back(jb::measure_events(o, jb::make_tables(dir.path(), o)));
    if (o.run_tpcc_pipe) r.tpcc_pipe = jb::measure_events(o, jb::make_tpcc_pipe(dir.path(), o));
    if (o.run_tpcc) r.tpcc = jb::measure_tpcc(o);
    aup::bench::publish(o.out_dir, "jit", jb::to_json(env, o, r), jb::to_markdown(env, o, r));
    if (o.quick && !jb::sane(r)) return aup::bench::smoke_failure(kProgram);
    return 0;
  });
}
