#include "bench/jit/tpcc_pipe.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/common/report.h"
#include "bench/jit/process.h"

namespace aup::bench::jit {

namespace {

// `aup-tpcc-gen ARGS` with its stdout into `output`.
void generate(const Options& o, std::vector<std::string> args, const std::string& output, const std::string& errors) {
  args.insert(args.begin(), o.tpcc_gen);
  run_child(Child{args, "/dev/null", output, errors});
}

uint64_t count_lines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return static_cast<uint64_t>(
      std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
}

// `first` then `second` into `to`.
void concatenate(const std::string& first, const std::string& second, const std::string& to) {
  std::ofstream out(to, std::ios::binary | std::ios::trunc);
  std::ifstream a(first, std::ios::binary), b(second, std::ios::binary);
  out << a.rdbuf() << b.rdbuf();
  out.flush();
  if (!a || !b || !out) throw std::runtime_error("cannot write " + to);
}

}  // namespace

EventCase make_tpcc_pipe(const std::string& dir, const Options& o) {
  EventCase c;
  c.name = "tpcc-pipe";
  c.module = o.tpcc_module;
  // A fixed clock: the answers (entry and delivery dates) are then the same
  // bytes on both sides.
  c.flags = {"--fixed-time", "1"};
  c.work = dir + "/tpcc-pipe.ndjson";
  c.baseline = dir + "/tpcc-load.ndjson";
  c.events = o.pipe_transactions;
  c.expected_error = kRollbackError;
  const std::string transactions = dir + "/tpcc-transactions.ndjson";
  const std::string errors = dir + "/tpcc-gen.err";
  const std::string w = std::to_string(o.warehouses), seed = std::to_string(o.seed);
  std::fprintf(stderr, "jit_bench: tpcc-pipe, generating W=%s and %llu transactions\n", w.c_str(),
               static_cast<unsigned long long>(o.pipe_transactions));
  generate(o, {"load", "--warehouses", w, "--seed", seed}, c.baseline, errors);
  generate(o,
           {"run", "--warehouses", w, "--transactions", std::to_string(o.pipe_transactions), "--seed", seed,
            "--terminals", std::to_string(o.terminals)},
           transactions, errors);
  concatenate(c.baseline, transactions, c.work);
  std::remove(transactions.c_str());
  std::remove(errors.c_str());
  uint64_t load = count_lines(c.baseline);
  c.requests = count_lines(c.work);
  if (c.requests != load + c.events) {
    throw std::runtime_error(fmt::format("tpcc-pipe: {} lines of input, not {} load events and {} transactions",
                                         c.requests, load, c.events));
  }
  c.shape = fmt::format(
      "`aup-tpcc-gen load --warehouses {0} --seed {1}` ({2} load events) alone, and followed by `aup-tpcc-gen run "
      "--warehouses {0} --transactions {3} --seed {1} --terminals {4}` ({5} transactions, {4} terminals taking "
      "turns), on the stdin of `aup run {6} --memory --fixed-time 1`",
      w, seed, grouped(load), o.pipe_transactions, o.terminals, grouped(c.events), o.tpcc_module);
  return c;
}

}  // namespace aup::bench::jit
