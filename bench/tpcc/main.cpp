// aup-tpcc: TPC-C on aup and on SQLite, side by side (docs/benchmarks.md,
// "TPC-C").
//
//   aup-tpcc load        --backend KIND --dir DIR [--warehouses W]
//   aup-tpcc run         --backend KIND --dir DIR [--warehouses W] [--terminals N] [--connections C] [--seconds S]
//   aup-tpcc consistency --backend KIND --dir DIR [--warehouses W]
//   aup-tpcc same-state  [--warehouses W] [--transactions N] [--sqlite KIND] [--dir DIR]
//   aup-tpcc matrix      [--ram DIR] [--disk DIR] [--seconds S] [--cells KIND:N,...] [--connections C,...] [--out DIR]
//
// Every command also takes --engine E: the aup server is started with
// `aup run --engine E` (vm, jit); without it no --engine is passed.
//
// Exit status: 0 done (and consistent, and the same state), 1 a check failed
// or a backend failed, 2 usage.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "bench/tpcc/backend.h"
#include "bench/common/cpus.h"
#include "bench/tpcc/matrix.h"
#include "bench/tpcc/measure.h"
#include "bench/tpcc/same_state.h"

#ifndef AUP_TPCC_DEFAULT_AUP
#define AUP_TPCC_DEFAULT_AUP "aup"
#endif
#ifndef AUP_TPCC_DEFAULT_MODULE
#define AUP_TPCC_DEFAULT_MODULE "examples/tpcc/tpcc.aup"
#endif

namespace aup::tpcc {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
// Bounds on what a command line may ask: the module's warehouse ids, the
// server's connection limit, and an hour per timed run.
constexpr double kMaxSeconds = 3600;
constexpr uint64_t kMaxSameStateTransactions = 100'000'000;

// What every command that talks to a backend is told.
struct Common {
  std::string backend = "aup";
  std::string dir;
  int64_t warehouses = 1;
  uint64_t seed = 1;
  std::string aup = AUP_TPCC_DEFAULT_AUP;
  std::string module = AUP_TPCC_DEFAULT_MODULE;
  // None: the server is pinned to one core, where the owner serving the
  // connections itself saves handing each request to it and each answer
  // back (docs/benchmarks.md has the figures of both).
  uint32_t io_threads = 0;
  std::string cpus = "auto";
  // The aup server's --engine (vm, jit); empty: none is passed, so aup's
  // own default applies.
  std::string engine;
};

void add_common(CLI::App* cmd, Common& c, bool with_backend) {
  if (with_backend) {
    cmd->add_option("--backend", c.backend, "aup, sqlite, sqlite-tuned or sqlite-grouped (default aup)")
        ->check(CLI::IsMember(backend_kinds()));
    cmd->add_option("--dir", c.dir, "the backend's data directory (made when missing)")->required();
  }
  cmd->add_option("--warehouses", c.warehouses, "warehouses W (default 1)")
      ->check(CLI::Range(int64_t{1}, kMaxWarehouses));
  cmd->add_option("--seed", c.seed, "seed of the population and the transactions (default 1)");
  cmd->add_option("--aup", c.aup, "the aup executable (default: the one built beside this program)");
  cmd->add_option("--module", c.module, "the TPC-C module (default: examples/tpcc/tpcc.aup)");
  cmd->add_option("--io-threads", c.io_threads,
                  "the aup server's --io-threads (default 0: the owner thread serves the connections)")
      ->check(CLI::Range(0, 64));
  cmd->add_option("--engine", c.engine,
                  "the aup server's --engine (vm or jit; default: none passed, aup's own default)");
  cmd->add_option("--cpus", c.cpus,
                  "CLIENT:SERVER CPU lists: the terminals on CLIENT, the system under test on SERVER\n"
                  "(SQLite runs in this process, so all of it goes on SERVER); `auto` (default) is 0:1\n"
                  "with two or more CPUs, `none` pins nothing");
}

// Whether `dir` lies on a block device rather than in memory (tmpfs): the
// tuned SQLite uses 1 KiB pages on disk only.
bool on_block_device(const std::string& dir) {
  std::filesystem::path p = std::filesystem::absolute(dir);
  return p.string().rfind("/dev/shm", 0) != 0 && p.string().rfind("/run/", 0) != 0;
}

BackendConfig backend_config(const Common& c, const std::string& kind, const std::string& dir, uint32_t terminals) {
  BackendConfig b;
  b.kind = kind;
  b.dir = dir;
  b.warehouses = c.warehouses;
  b.terminals = terminals;
  b.on_disk = on_block_device(dir);
  b.aup = c.aup;
  b.module = c.module;
  b.io_threads = c.io_threads;
  b.engine = c.engine;
  return b;
}

void progress_line(const std::string& line) {
  std::fprintf(stderr, "\raup-tpcc: %-70s", line.c_str());
  std::fflush(stderr);
}

void end_progress() { std::fprintf(stderr, "\n"); }

int do_load(const Common& c) {
  std::unique_ptr<Backend> b = make_backend(backend_config(c, c.backend, c.dir, 1));
  auto started = std::chrono::steady_clock::now();
  b->load(LoadConfig{c.warehouses, c.seed, kDefaultBatchRows, kDefaultLoadTimeMs},
          [](uint64_t rows) { progress_line(fmt::format("load: {} rows", rows)); });
  b->close();
  end_progress();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("loaded %lld warehouse(s) into %s (%s) in %.1f s\n", static_cast<long long>(c.warehouses),
              c.dir.c_str(), c.backend.c_str(), s);
  return kExitOk;
}

// "aup, W=1, 64 terminals" and, when they share fewer, " over 8 connections".
std::string run_title(const BackendConfig& b) {
  std::string title = fmt::format("{}, W={}, {} terminals", b.kind, b.warehouses, b.terminals);
  uint32_t n = server_connections(b.kind, b.terminals, b.connections);
  if (n != 0 && n != b.terminals) title += fmt::format(" over {} connections", n);
  return title;
}

int do_run(const Common& c, const BackendConfig& config, const RunSpec& spec_in, const std::string& json_path) {
  RunSpec spec = spec_in;
  spec.warehouses = c.warehouses;
  spec.seed = c.seed;
  Measured m = measure(config, spec, bench::parse_cpu_plan(c.cpus), progress_line);
  end_progress();
  std::printf("%s: %s", run_title(config).c_str(), measured_text(m).c_str());
  if (!json_path.empty()) {
    uint32_t n = server_connections(config.kind, config.terminals, config.connections);
    std::string labels = fmt::format("\"backend\":\"{}\",\"warehouses\":{},\"terminals\":{},\"connections\":{}",
                                     c.backend, c.warehouses, spec.terminals, n ? std::to_string(n) : "null");
    std::FILE* f = std::fopen(json_path.c_str(), "w");
    if (!f) throw std::runtime_error("cannot write " + json_path);
    std::string json = measured_json(m, labels) + "\n";
    bool ok = std::fwrite(json.data(), 1, json.size(), f) == json.size();
    if (std::fclose(f) != 0 || !ok) throw std::runtime_error("cannot write " + json_path);
  }
  return m.problems.empty() ? kExitOk : kExitFailed;
}

int do_consistency(const Common& c) {
  std::unique_ptr<Backend> b = make_backend(backend_config(c, c.backend, c.dir, 1));
  std::vector<std::string> problems = b->consistency(c.warehouses);
  b->close();
  for (const std::string& p : problems) std::printf("%s\n", p.c_str());
  std::printf("%s, W=%lld: consistency conditions 1-4 (clause 3.3.2.1-3.3.2.4) %s\n", c.backend.c_str(),
              static_cast<long long>(c.warehouses), problems.empty() ? "hold" : "do NOT hold");
  return problems.empty() ? kExitOk : kExitFailed;
}

// A fresh directory for same-state when none is given; removed afterwards.
std::string temporary_dir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/aup-tpcc-XXXXXX";
  if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot make a directory like " + pattern);
  return pattern;
}

int do_same_state(const Common& c, uint64_t transactions, const std::string& sqlite_kind) {
  bool temporary = c.dir.empty();
  std::string dir = temporary ? temporary_dir() : c.dir;
  SameStateOptions o;
  o.warehouses = c.warehouses;
  o.transactions = transactions;
  o.seed = c.seed;
  o.aup = backend_config(c, "aup", dir + "/aup", 1);
  o.sqlite = backend_config(c, sqlite_kind, dir + "/" + sqlite_kind, 1);
  uint64_t differences = 0;
  try {
    differences = same_state(o, stdout);
  } catch (...) {
    if (temporary) std::filesystem::remove_all(dir);
    throw;
  }
  if (temporary) std::filesystem::remove_all(dir);
  return differences == 0 ? kExitOk : kExitFailed;
}

// "aup:16,sqlite-grouped:64" → cells; throws std::invalid_argument.
std::vector<MatrixCell> parse_cells(const std::string& text) {
  std::vector<MatrixCell> cells;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t comma = text.find(',', begin);
    std::string item = text.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    size_t colon = item.find(':');
    std::string kind = item.substr(0, colon);
    const auto& kinds = backend_kinds();
    if (colon == std::string::npos || std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      throw std::invalid_argument("--cells needs KIND:TERMINALS items (aup:16,sqlite:1), not `" + item + "`");
    }
    std::string n = item.substr(colon + 1);
    if (n.empty() || n.size() > 4 || n.find_first_not_of("0123456789") != std::string::npos || std::stoul(n) == 0 ||
        std::stoul(n) > kMaxTerminals - 24) {
      throw std::invalid_argument("bad terminal count in `" + item + "`");
    }
    cells.push_back(MatrixCell{kind, static_cast<uint32_t>(std::stoul(n))});
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  if (cells.empty()) throw std::invalid_argument("--cells needs at least one KIND:TERMINALS");
  return cells;
}

// `run`'s own options.
struct RunArgs {
  RunSpec spec;  // 20 s after a 2 s warm-up unless told
  uint32_t connections = 0;  // 0: a connection per terminal
  std::string json_path;
};

CLI::App* add_run_command(CLI::App& app, Common& common, RunArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "run", "Run N terminals against a loaded store for a warm-up and a timed phase, then check consistency.");
  add_common(cmd, common, true);
  cmd->add_option("--terminals", a.spec.terminals, "terminals N, each waiting for its answer (default 1)")
      ->check(CLI::Range(uint32_t{1}, kMaxTerminals - 24));
  cmd->add_option("--connections", a.connections,
                  "aup only: the terminals share C pipelined connections, terminal i on connection i % C\n"
                  "(1 to the terminals; default: a connection per terminal)")
      ->check(CLI::Range(uint32_t{1}, kMaxTerminals - 24));
  cmd->add_option("--seconds", a.spec.seconds, "length of the timed phase (default 20)")
      ->check(CLI::Range(0.1, kMaxSeconds));
  cmd->add_option("--warmup", a.spec.warmup_s, "warm-up before it (default 2)")->check(CLI::Range(0.0, kMaxSeconds));
  cmd->add_option("--json", a.json_path, "also write the figures as one JSON object to this file");
  return cmd;
}

// `matrix`'s own options.
struct MatrixArgs {
  MatrixOptions matrix;
  std::string ram_dir = "/dev/shm", disk_dir;
  bool ram_only = false;
  std::string cells_text;
  std::vector<uint32_t> connections;
};

CLI::App* add_matrix_command(CLI::App& app, Common& common, MatrixArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "matrix",
      "The comparison: RAM and disk, W=1 and W=4, aup at 16 and 64 terminals, sqlite and sqlite-tuned\n"
      "at 1 and 4, sqlite-grouped at 16 and 64; results to bench/results/tpcc.{json,md,*.svg}.");
  add_common(cmd, common, false);
  cmd->add_option("--ram", a.ram_dir, "a directory in memory (default /dev/shm)");
  cmd->add_option("--disk", a.disk_dir, "a directory on the work volume (default: build/tpcc-bench)");
  cmd->add_flag("--ram-only", a.ram_only, "leave the disk rows out");
  cmd->add_option("--warehouse-counts", a.matrix.warehouses, "the W values (default 1 4)");
  cmd->add_option("--cells", a.cells_text,
                  "the runs per medium and W as KIND:TERMINALS,... (default aup:16,aup:64,sqlite:1,\n"
                  "sqlite:4,sqlite-tuned:1,sqlite-tuned:4,sqlite-grouped:16,sqlite-grouped:64)");
  cmd->add_option("--connections", a.connections,
                  "run every aup cell once per value C,... with its terminals sharing C pipelined connections\n"
                  "(a value at or above a cell's terminals: a connection per terminal; default: that alone)")
      ->delimiter(',')
      ->check(CLI::Range(uint32_t{1}, kMaxTerminals - 24));
  cmd->add_option("--seconds", a.matrix.seconds, "timed phase per run (default 20)")
      ->check(CLI::Range(0.1, kMaxSeconds));
  cmd->add_option("--warmup", a.matrix.warmup, "warm-up per run (default 2)")->check(CLI::Range(0.0, kMaxSeconds));
  cmd->add_option("--reps", a.matrix.reps, "repetitions of every run (default 1)")->check(CLI::Range(1, 100));
  cmd->add_option("--out", a.matrix.out_dir, "where tpcc.json, tpcc.md and the plots go (default: none)");
  return cmd;
}

int do_matrix(const Common& common, MatrixArgs& a, int argc, char** argv) {
  MatrixOptions& matrix = a.matrix;
  matrix.media.push_back(MatrixMedium{"ram", a.ram_dir, false});
  if (!a.ram_only) {
    matrix.media.push_back(MatrixMedium{"disk", a.disk_dir.empty() ? "build/tpcc-bench" : a.disk_dir, true});
  }
  matrix.seed = common.seed;
  matrix.aup = common.aup;
  matrix.module = common.module;
  matrix.io_threads = common.io_threads;
  matrix.engine = common.engine;
  matrix.cpus = bench::parse_cpu_plan(common.cpus);
  for (int i = 0; i < argc; ++i) matrix.command += (i ? " " : "") + std::string(argv[i]);
  return run_matrix(matrix);
}

int main_impl(int argc, char** argv) {
  CLI::App app{"aup-tpcc: TPC-C on aup (`aup run --listen`) and on SQLite (in this process), the same\n"
               "transactions from the same seeded generator, measured side by side."};
  app.require_subcommand(1);
  app.footer("Exit status: 0 done, 1 a check or a backend failed, 2 usage.\n"
             "Run `aup-tpcc COMMAND --help` for a command's options.");

  Common common;
  CLI::App* load_cmd = app.add_subcommand("load", "Load the initial population of W warehouses into an empty store.");
  add_common(load_cmd, common, true);

  RunArgs run;
  CLI::App* run_cmd = add_run_command(app, common, run);

  CLI::App* consistency_cmd = app.add_subcommand(
      "consistency", "Check TPC-C consistency conditions 1-4 (clause 3.3.2.1-3.3.2.4) on a store.");
  add_common(consistency_cmd, common, true);

  uint64_t transactions = 20'000;
  std::string sqlite_kind = "sqlite";
  CLI::App* same_cmd = app.add_subcommand(
      "same-state",
      "Load W warehouses into aup and into SQLite, run the same transactions on one terminal on each,\n"
      "and compare every answer and every row of the nine tables (timestamps aside).");
  add_common(same_cmd, common, false);
  same_cmd->add_option("--transactions", transactions, "transactions (default 20000)")
      ->check(CLI::Range(uint64_t{1}, kMaxSameStateTransactions));
  same_cmd->add_option("--sqlite", sqlite_kind, "the SQLite configuration (default sqlite)")
      ->check(CLI::IsMember(std::vector<std::string>{"sqlite", "sqlite-tuned", "sqlite-grouped"}));
  same_cmd->add_option("--dir", common.dir, "where both stores go (default: a temporary directory, removed)");

  MatrixArgs m;
  CLI::App* matrix_cmd = add_matrix_command(app, common, m);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  BackendConfig run_config;
  try {
    bench::parse_cpu_plan(common.cpus);
    m.matrix.cells =
        with_connections(m.cells_text.empty() ? default_cells() : parse_cells(m.cells_text), m.connections);
    if (run_cmd->parsed()) {
      run_config = backend_config(common, common.backend, common.dir, run.spec.terminals);
      run_config.connections = run.connections;
      check_connections(run_config);
    }
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "aup-tpcc: %s\n", e.what());
    return kExitUsage;
  }
  try {
    if (load_cmd->parsed()) return do_load(common);
    if (run_cmd->parsed()) return do_run(common, run_config, run.spec, run.json_path);
    if (consistency_cmd->parsed()) return do_consistency(common);
    if (same_cmd->parsed()) return do_same_state(common, transactions, sqlite_kind);
    if (matrix_cmd->parsed()) return do_matrix(common, m, argc, argv);
  } catch (const std::exception& e) {
    end_progress();
    std::fprintf(stderr, "aup-tpcc: %s\n", e.what());
    return kExitFailed;
  }
  return kExitUsage;
}

}  // namespace
}  // namespace aup::tpcc

int main(int argc, char** argv) { return aup::tpcc::main_impl(argc, argv); }
