#include "bench/tpcc/same_state.h"

#include <fmt/format.h>

#include <chrono>

#include "bench/tpcc/driver.h"

namespace aup::tpcc {

namespace {

struct Answer {
  TxKind kind;
  TxResult result;
};

struct Side {
  std::vector<Answer> answers;  // in the terminal's order
  State state;
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Loads, runs the transactions on one terminal keeping every answer, dumps.
Side run_side(const BackendConfig& config, const SameStateOptions& o, std::FILE* out) {
  Side side;
  side.answers.reserve(o.transactions);
  std::unique_ptr<Backend> backend = make_backend(config);
  auto started = std::chrono::steady_clock::now();
  backend->load(LoadConfig{o.warehouses, o.seed, kDefaultBatchRows, kDefaultLoadTimeMs}, [](uint64_t) {});
  std::fprintf(out, "%s: loaded %lld warehouse(s) in %.1f s\n", config.kind.c_str(),
               static_cast<long long>(o.warehouses), seconds_since(started));
  RunSpec spec;
  spec.warehouses = o.warehouses;
  spec.terminals = 1;
  spec.seed = o.seed;
  spec.transactions_per_terminal = o.transactions;
  started = std::chrono::steady_clock::now();
  run_terminals(*backend, spec, nullptr, [&](uint32_t, uint64_t, const Transaction& tx, const TxResult& r) {
    side.answers.push_back(Answer{kind_of(tx), r});
  });
  std::fprintf(out, "%s: ran %llu transactions in %.1f s\n", config.kind.c_str(),
               static_cast<unsigned long long>(o.transactions), seconds_since(started));
  side.state = backend->dump();
  backend->close();
  std::fflush(out);
  return side;
}

std::string show(const TxResult& r) {
  if (r.outcome == Outcome::rolled_back) return "rolled back";
  return fmt::format("[{}]", fmt::join(r.values, ", "));
}

uint64_t compare_answers(const Side& a, const Side& b, const SameStateOptions& o, std::FILE* out) {
  uint64_t differences = 0;
  size_t n = std::min(a.answers.size(), b.answers.size());
  for (size_t i = 0; i < n; ++i) {
    const TxResult& x = a.answers[i].result;
    const TxResult& y = b.answers[i].result;
    if (x.outcome == y.outcome && x.values == y.values) continue;
    if (differences < o.max_shown) {
      std::fprintf(out, "transaction %zu (%s): %s answered %s, %s answered %s\n", i + 1,
                   std::string(name_of(a.answers[i].kind)).c_str(), o.aup.kind.c_str(), show(x).c_str(),
                   o.sqlite.kind.c_str(), show(y).c_str());
    }
    ++differences;
  }
  if (differences > o.max_shown) {
    std::fprintf(out, "%llu more differing answers\n", static_cast<unsigned long long>(differences - o.max_shown));
  }
  return differences + (a.answers.size() != b.answers.size() ? 1 : 0);
}

}  // namespace

uint64_t same_state(const SameStateOptions& o, std::FILE* out) {
  Side a = run_side(o.aup, o, out);
  Side b = run_side(o.sqlite, o, out);
  uint64_t answers = compare_answers(a, b, o, out);
  uint64_t rows = compare_states(a.state, b.state, o.aup.kind, o.sqlite.kind, out, o.max_shown);
  TableCounts counts = counts_of(a.state);
  if (answers + rows == 0) {
    std::fprintf(out, "same state: %llu transactions gave the same answers, and the %llu rows of the nine tables "
                 "are the same (timestamps aside) on %s and %s\n",
                 static_cast<unsigned long long>(o.transactions), static_cast<unsigned long long>(counts.total()),
                 o.aup.kind.c_str(), o.sqlite.kind.c_str());
  } else {
    std::fprintf(out, "NOT the same: %llu differing answers, %llu differing rows\n",
                 static_cast<unsigned long long>(answers), static_cast<unsigned long long>(rows));
  }
  return answers + rows;
}

}  // namespace aup::tpcc
