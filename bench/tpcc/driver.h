// The terminals of a timed run: N threads, each with its own
// TransactionGenerator and Terminal, each waiting for an answer before it
// sends its next transaction (no keying or think time). After a warm-up,
// a timed phase counts what completed in it and keeps every latency, per
// transaction type; the working process's figures are read at the phase's
// two ends.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/tpcc/backend.h"
#include "bench/tpcc/generator.h"

namespace aup::tpcc {

struct RunSpec {
  int64_t warehouses = 1;
  uint32_t terminals = 1;
  uint64_t seed = 1;
  double warmup_s = 2;
  double seconds = 20;
  // Bounds the run by transactions instead (same-state): each terminal runs
  // exactly this many and the timed phase is the whole run; 0: by time.
  uint64_t transactions_per_terminal = 0;
};

// One transaction type's figures in the timed phase.
struct KindFigures {
  uint64_t completed = 0;            // committed + rolled back (rollbacks count, clause 5.4.2)
  uint64_t rolled_back = 0;
  std::vector<double> latencies_us;  // every completed one, ascending
  double percentile_us(double p) const;  // p in [0, 1]; 0 when none
};

struct RunResult {
  double seconds = 0;  // the timed phase as measured
  std::array<KindFigures, kTxKinds> kinds;
  ProcessFigures before, after;  // the working process at the phase's ends
  double driver_cpu_ns = 0;      // this process over the phase (the same process as SQLite's work)
  RunCounts input;               // what the generators produced in the phase (5.5.1.5 shares)

  uint64_t transactions() const;
  double transactions_per_s() const;
  double new_orders_per_min() const;
  // Server CPU per transaction (µs): user + system, and each apart; bytes
  // per transaction; over the phase.
  double cpu_us_per_transaction() const;
  double user_us_per_transaction() const;
  double system_us_per_transaction() const;
  double write_bytes_per_transaction() const;
  // -1 when the data is not on a block device.
  double device_bytes_per_transaction() const;
  // All types together, ascending (for the latency CDF).
  std::vector<double> all_latencies_us() const;
};

// A callback for the recorder of every transaction (same-state keeps the
// answers): terminal, sequence within the terminal, transaction, result.
// Called on the terminal's thread.
using TxObserver = std::function<void(uint32_t, uint64_t, const Transaction&, const TxResult&)>;

// Runs the terminals against `backend` (already loaded with spec.warehouses)
// and returns the figures; rethrows the first error of any terminal after
// stopping the others. `progress` gets a line (no newline) once a second.
RunResult run_terminals(Backend& backend, const RunSpec& spec, const std::function<void(const std::string&)>& progress,
                        const TxObserver& observer = nullptr);

}  // namespace aup::tpcc
