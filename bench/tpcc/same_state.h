// same-state: one terminal, one seed, the same N transactions on aup and
// on SQLite, each loaded from the same population; then every answer and
// every row of the nine tables compared (timestamps aside, state.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "bench/tpcc/backend.h"

namespace aup::tpcc {

struct SameStateOptions {
  int64_t warehouses = 1;
  uint64_t transactions = 20'000;
  uint64_t seed = 1;
  BackendConfig aup;     // kind "aup", its dir inside `dir`
  BackendConfig sqlite;  // a SQLite kind, its dir inside `dir`
  uint64_t max_shown = 10;  // differences printed in full per table
};

// Runs both and compares; prints progress and differences to `out`.
// Returns the number of differences (answers and rows); throws when a
// backend fails.
uint64_t same_state(const SameStateOptions& o, std::FILE* out);

}  // namespace aup::tpcc
