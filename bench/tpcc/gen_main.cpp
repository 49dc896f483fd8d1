// aup-tpcc-gen: TPC-C input for examples/tpcc/tpcc.aup as request lines.
//
//   aup-tpcc-gen load --warehouses W [--seed S] [--batch-rows N] [--load-time MS]
//   aup-tpcc-gen run --warehouses W --transactions N --seed S [--terminals T] [--summary]
//
// Both print NDJSON requests for `aup run MODULE` on stdout. The output is a
// pure function of the arguments (generator.h). Exit status: 0 written,
// 1 stdout could not be written, 2 usage.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>

#include "bench/tpcc/generator.h"

namespace aup::tpcc {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitWriteError = 1;
constexpr int kExitUsage = 2;
// A bound on --transactions: a billion lines is hours of benchmark and
// hundreds of GB of text, more than any run needs.
constexpr int64_t kMaxTransactions = 1'000'000'000;

struct LoadArgs {
  int64_t warehouses = 1;
  uint64_t seed = 1;
  int64_t batch_rows = kDefaultBatchRows;
  int64_t load_time_ms = kDefaultLoadTimeMs;
};

struct RunArgs {
  int64_t warehouses = 1;
  int64_t transactions = 0;
  uint64_t seed = 1;
  uint32_t terminals = 1;
  bool summary = false;
};

void put_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
}

// stdio remembers a failed write; one check at the end reports it (a
// closed pipe or a full disk must not look like a complete workload).
int finish_output() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "aup-tpcc-gen: cannot write to standard output\n");
    return kExitWriteError;
  }
  return kExitOk;
}

int run_load(const LoadArgs& a) {
  LoadConfig config;
  config.warehouses = a.warehouses;
  config.seed = a.seed;
  config.batch_rows = a.batch_rows;
  config.load_time_ms = a.load_time_ms;
  LoadRequestWriter writer(put_line, 1);
  generate_load(config, writer);
  return finish_output();
}

// Transaction i (from 0) comes from terminal i % T, so one stream holds
// every terminal's transactions in a fixed interleaving; request ids count
// from 1.
int run_run(const RunArgs& a) {
  RunConfig config;
  config.warehouses = a.warehouses;
  config.seed = a.seed;
  std::vector<TransactionGenerator> terminals;
  terminals.reserve(a.terminals);
  for (uint32_t t = 0; t < a.terminals; ++t) terminals.emplace_back(config, t);
  RunCounts counts;
  std::string line;
  for (int64_t i = 0; i < a.transactions; ++i) {
    Transaction tx = terminals[static_cast<size_t>(i % a.terminals)].next();
    counts.add(tx);
    line.clear();
    append_request_json(line, tx, static_cast<uint64_t>(i + 1));
    put_line(line);
  }
  if (a.summary) std::fprintf(stderr, "%s\n", counts.json().c_str());
  return finish_output();
}

int main_impl(int argc, char** argv) {
  CLI::App app{"aup-tpcc-gen: deterministic TPC-C input for examples/tpcc/tpcc.aup.\n"
               "Prints newline-delimited JSON requests for `aup run` on standard output.\n"
               "The same arguments always give the same bytes."};
  app.require_subcommand(1);
  app.footer("Exit status: 0 written, 1 standard output could not be written, 2 usage.\n"
             "Run `aup-tpcc-gen COMMAND --help` for a command's options.");

  LoadArgs load;
  CLI::App* load_cmd = app.add_subcommand(
      "load",
      "Print the initial population (TPC-C clause 4.3.3.1, the module's columns) as load events,\n"
      "one event per batch of rows, in the order the module needs: items, warehouses, districts,\n"
      "customers, history, orders, new orders, order lines, stock. Ids count from 1.");
  load_cmd->add_option("--warehouses", load.warehouses, "number of warehouses W")
      ->required()
      ->check(CLI::Range(int64_t{1}, kMaxWarehouses));
  load_cmd->add_option("--seed", load.seed, "seed of the random rows (default 1)");
  load_cmd->add_option("--batch-rows", load.batch_rows, "rows per load event (default 1000)")
      ->check(CLI::Range(int64_t{1}, kMaxBatchRows));
  load_cmd->add_option("--load-time", load.load_time_ms,
                       "entry, delivery and history date of the loaded rows, ms since the Unix epoch "
                       "(default 1700000000000)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 50));

  RunArgs run;
  CLI::App* run_cmd = app.add_subcommand(
      "run",
      "Print N transactions in the mix New-Order 45%, Payment 43%, Order-Status 4%, Delivery 4%,\n"
      "Stock-Level 4%, with TPC-C's inputs: 1% of New-Orders end in an unused item (100001) and\n"
      "must fail with `item number is not valid`; with W > 1, 1% of order lines are supplied by\n"
      "another warehouse and 15% of Payments pay for another warehouse's customer. 60% of Payment\n"
      "and Order-Status customers are named by a NURand last name; each Delivery delivers all ten\n"
      "districts of its warehouse. Ids count from 1.");
  run_cmd->add_option("--warehouses", run.warehouses, "number of warehouses W (as loaded)")
      ->required()
      ->check(CLI::Range(int64_t{1}, kMaxWarehouses));
  run_cmd->add_option("--transactions", run.transactions, "number of transactions N")
      ->required()
      ->check(CLI::Range(int64_t{0}, kMaxTransactions));
  run_cmd->add_option("--seed", run.seed, "seed of the stream")->required();
  run_cmd->add_option("--terminals", run.terminals,
                      "terminals T, taking turns: terminal t's home is warehouse t % W + 1 and its\n"
                      "Stock-Level district (t / W) % 10 + 1 (default 1)")
      ->check(CLI::Range(uint32_t{1}, kMaxTerminals));
  run_cmd->add_flag("--summary", run.summary,
                    "after the requests, print one JSON line of counts to standard error (per\n"
                    "transaction type, rollbacks, order lines, remote order lines, remote payments)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }
  if (load_cmd->parsed()) return run_load(load);
  if (run_cmd->parsed()) return run_run(run);
  return kExitUsage;
}

}  // namespace
}  // namespace aup::tpcc

int main(int argc, char** argv) { return aup::tpcc::main_impl(argc, argv); }
