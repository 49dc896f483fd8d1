// The request streams of the events benchmark, generated from a seed, with
// what `aup run` must answer to them (so a run that answers wrongly is
// caught before it is timed).
//
//   bank          examples/bank/bank.aup: open every account, deposit into
//                 each, then random transfers; some fail (insufficient
//                 funds, unknown account, same account, bad amount).
//   ledger_adds   bench/events/ledger.aup: add rows in random key order.
//   ledger_views  the same adds, then `window` queries over random key
//                 ranges (a view's count, first and last).
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace aup::bench::events {

struct Workload {
  std::string name;
  std::string module;  // the .aup file
  std::string input;   // the generated request file, one JSON request a line
  uint64_t requests = 0;
  uint64_t events = 0;   // of the requests, events (the rest are queries)
  uint64_t bytes = 0;
  uint64_t expect_ok = 0;      // responses with "ok":true
  uint64_t expect_failed = 0;  // responses with "ok":false
  uint64_t expect_count_sum = 0;  // ledger_views: the sum of every "count"
};

struct BankShape {
  uint64_t accounts = 10000;
  uint64_t transfers = 1000000;
};

struct LedgerShape {
  uint64_t adds = 500000;
  uint64_t views = 200000;
  uint64_t max_width = 2000;  // a window spans 1..max_width keys
};

// Write the input into `dir`; throw std::runtime_error if it cannot.
Workload make_bank(const std::string& dir, const std::string& module, const BankShape& shape, uint64_t seed);
// Returns {ledger_adds, ledger_views}, sharing the same adds.
std::pair<Workload, Workload> make_ledger(const std::string& dir, const std::string& module,
                                          const LedgerShape& shape, uint64_t seed);

}  // namespace aup::bench::events
