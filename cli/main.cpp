// aup: the command users type. It only parses the command line; each
// subcommand's work lives in a library (compiler/, vm/, runtime/) behind
// cli/commands.h.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cmath>
#include <string_view>
#include <vector>

#include "compiler/check_cli.h"
#include "cli/commands.h"
#include "runtime/replay.h"
#include "compiler/suggest.h"

namespace {

// Before CLI11 parses: `aup` alone prints the help, and a first word that
// is no command is named with the closest command (CLI11 would only say
// that a subcommand is required). -1 when the line has a known command.
int missing_command(CLI::App& app, int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "{}", app.help());
    return aup::kExitUsage;
  }
  std::string_view first = argv[1];
  if (first.empty() || first[0] == '-') return -1;  // --help, --version, or an error CLI11 reports
  std::vector<std::string_view> names;
  std::string list;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_name() == first) return -1;
    names.push_back(sub->get_name());
    list += (list.empty() ? "" : ", ") + sub->get_name();
  }
  fmt::print(stderr, "aup: no command `{}`{} (the commands: {}; `aup --help` says more)\n", first,
             aup::did_you_mean(first, names), list);
  return aup::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"aup: durable applications from small typed modules.\n"
               "Write tables, events and queries in an .aup file; aup checks, builds and runs it."};
  app.set_version_flag("--version", "aup " AUP_VERSION);
  app.require_subcommand(1);
  app.footer("Run `aup COMMAND --help` for a command's options.");

  aup::CheckOptions check;
  CLI::App* check_cmd = aup::add_check_command(app, check);

  aup::cli::BuildOptions build;
  CLI::App* build_cmd = app.add_subcommand(
      "build", "Compile a module to a module file (schema, bytecode, line table).\n"
               "Exit status: 0 written, 1 errors in the module, 2 usage or I/O.");
  build_cmd->add_option("source", build.source, "the .aup file")->required()->type_name("FILE.aup");
  build_cmd->add_option("-o,--output", build.output, "the module file to write (default: FILE.aupm)")
      ->type_name("FILE.aupm");

  aup::cli::DisasmOptions disasm;
  CLI::App* disasm_cmd = app.add_subcommand(
      "disasm", "Print a module's schema and bytecode, one instruction a line with source positions;\n"
                "with --ir, the LLVM IR `aup run --engine jit` compiles instead.");
  disasm_cmd->add_option("module", disasm.module, "an .aupm module file, or an .aup source (compiled first)")
      ->required()
      ->type_name("MODULE");
  CLI::Option* ir = disasm_cmd->add_flag("--ir", disasm.ir, "print LLVM IR (after LLVM's O2 optimizations, as it runs)");
  disasm_cmd->add_option("--function", disasm.function, "with --ir: only this handler, query or helper")
      ->type_name("NAME")
      ->needs(ir);
  disasm_cmd->add_flag("--unoptimized", disasm.unoptimized, "with --ir: the IR as translated, before optimizing")
      ->needs(ir);

  aup::cli::RunOptions run;
  double fixed_time = 0;
  CLI::App* run_cmd = app.add_subcommand(
      "run", "Open (or create) the store, replay it, then apply events and answer queries: one JSON\n"
             "request a line on stdin, one response a line on stdout, in order, until end of input or\n"
             "SIGINT/SIGTERM. Events read together are committed together (one fdatasync) before any\n"
             "of them is answered.");
  run_cmd->add_option("module", run.module, "an .aupm module file, or an .aup source (compiled first)")
      ->required()
      ->type_name("MODULE");
  CLI::Option* data = run_cmd->add_option("--data", run.data, "the store directory")->capture_default_str()->type_name("DIR");
  run_cmd->add_flag("--memory", run.memory, "keep the state in memory only: nothing is written, nothing survives")
      ->excludes(data);
  run_cmd->add_option("--max-batch", run.max_batch, "at most N events per commit (default: all read together)")
      ->check(CLI::Range(1u, 1000000u));
  run_cmd->add_option("--segment-size", run.segment_bytes, "bytes per log segment (default 64 MiB)")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 34));
  run_cmd->add_option("--image-min", run.image_min_bytes,
                      "least log bytes for a table before it gets a new image (default 1 MiB)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  run_cmd->add_option("--log-min", run.log_min_bytes,
                      "least live log bytes before the oldest table gets a new image (default 64 MiB)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  run_cmd->add_option("--step-budget", run.step_budget,
                      "steps (loop rounds and calls) one event or query may take (default 10000000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  run_cmd->add_option("--max-line", run.max_line_bytes, "longest request line in bytes (default 16 MiB)")
      ->check(CLI::Range(uint64_t{64}, uint64_t{1} << 30));
  run_cmd->add_option("--listen", run.listen,
                      "serve many connections instead of stdin: unix:PATH (mode 0600), HOST:PORT, or :PORT\n"
                      "(loopback); the address is printed on stderr")
      ->type_name("ADDR");
  run_cmd->add_option("--io-threads", run.io_threads,
                      "with --listen: threads that read, write and run queries; 0: the owner thread serves\n"
                      "the connections itself, each request run to completion (default: 0 when this process\n"
                      "may run on at most two CPUs, else 2)")
      ->check(CLI::Range(0u, 64u));
  run_cmd->add_option("--max-connections", run.max_connections,
                      "with --listen: connections at once; more are answered `unavailable` (default 1024)")
      ->check(CLI::Range(1u, 1000000u));
  run_cmd->add_option("--max-pending", run.max_pending,
                      "with --listen: requests of one connection read but not yet answered; past it the\n"
                      "connection is not read until answers are taken (default 1024)")
      ->check(CLI::Range(1u, 1000000u));
  run_cmd->add_option("--max-output", run.max_output_bytes,
                      "with --listen: bytes of answers waiting for one connection before it is no longer\n"
                      "read (default 16 MiB)")
      ->check(CLI::Range(uint64_t{4096}, uint64_t{1} << 40));
  run_cmd->add_flag("--stats", run.stats,
                    "at exit, print the store's figures as one JSON line on stderr (`aup: totals {...}`):\n"
                    "commits, bytes written, checkpoints, commit latency (write + fdatasync) p50/p99/max;\n"
                    "with --listen also a line a second (`aup: stats {...}`): events/s, queries/s, batch\n"
                    "size, commit p50/p99, the owner thread's share of a core, snapshot nodes copied and\n"
                    "recycled, log bytes, connections");
  run_cmd->add_option("--engine", run.engine,
                      "how module code runs: jit (the default: native code compiled with LLVM at load, kept\n"
                      "in a cache, $AUP_JIT_CACHE or ~/.cache/aup/jit) or vm (the bytecode interpreter); the\n"
                      "same results, byte for byte. By default a module of over 20,000 instructions, or a\n"
                      "machine where the JIT cannot load, runs on the VM. $AUP_ENGINE, if set, stands in for\n"
                      "this option")
      ->check(CLI::IsMember({"vm", "jit"}))
      ->type_name("ENGINE");
  CLI::Option* fixed = run_cmd->add_option(
      "--fixed-time", fixed_time,
      "use this time (ms since the Unix epoch) as `now` for every event and query (for tests)")
      ->check(CLI::Validator(
          [](std::string& text) {
            double v = std::strtod(text.c_str(), nullptr);
            return std::isfinite(v) ? std::string() : "a time must be a finite number of milliseconds, not " + text;
          },
          "MS"));

  aup::runtime::ReplayOptions replay;
  uint64_t replay_at = 0;
  CLI::App* replay_cmd = app.add_subcommand(
      "replay", "Inspect a store without running module code and without writing to it.\n"
                "Exit status: 0 fine, 1 damage, 2 usage or a store that cannot be read.");
  replay_cmd->add_option("--data", replay.data, "the store directory")->capture_default_str()->type_name("DIR");
  replay_cmd->add_flag("--verify", replay.verify, "read everything; check every digest and the log's chain");
  replay_cmd->add_flag("--entries", replay.entries, "one JSON line per log entry");
  CLI::Option* dump = replay_cmd->add_option("--dump", replay.dump, "print a table's rows as JSON lines")->type_name("TABLE");
  replay_cmd->add_flag("--vars", replay.vars, "print the vars as one JSON object")->excludes(dump);
  CLI::Option* at = replay_cmd->add_option("--at", replay_at, "with --dump or --vars: as of this save number")
                        ->type_name("SEQ");

  if (int rc = missing_command(app, argc, argv); rc >= 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return aup::cli_exit(app, e);
  }
  if (check_cmd->parsed()) return aup::run_check(check, stdout, stderr);
  if (build_cmd->parsed()) return aup::cli::build(build);
  if (disasm_cmd->parsed()) return aup::cli::disasm(disasm);
  if (run_cmd->parsed()) {
    if (fixed->count()) run.fixed_time = fixed_time;
    return aup::cli::run(run);
  }
  if (replay_cmd->parsed()) {
    if (at->count()) replay.at = replay_at;
    std::string faults;
    std::unique_ptr<aup::storage::Io> io = aup::storage::io_from_environment(faults);
    if (!io) {
      std::fprintf(stderr, "aup replay: AUP_FAULTS: %s\n", faults.c_str());
      return aup::kExitUsage;
    }
    return aup::runtime::replay(*io, replay, stdout, stderr);
  }
  return aup::kExitUsage;
}
