// What the matrix keeps of each run and what it makes of them: a run's
// figures (a few numbers and a downsampled latency CDF, so that a long
// matrix holds kilobytes per run, not its million latencies), the medians
// of a cell over its repetitions, and the aup/SQLite ratios set against
// the goals in matrix_figures.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/tpcc/generator.h"
#include "bench/tpcc/matrix.h"
#include "bench/tpcc/measure.h"

namespace aup::tpcc {

// A run's figures as the report uses them (latencies in µs).
struct RunFigures {
  double transactions_per_s = 0;
  double new_orders_per_min = 0;
  std::array<double, kTxKinds> p50_us{};
  std::array<double, kTxKinds> p99_us{};
  double p99_us_all = 0;  // every type together
  double cpu_us_per_transaction = 0;  // user + system
  double user_us_per_transaction = 0;
  double system_us_per_transaction = 0;
  double write_bytes_per_transaction = 0;
  double device_bytes_per_transaction = -1;  // -1: not on a block device
  double resident_bytes = 0;
  double state_bytes = 0;
  // The latency of all transactions at each of cdf_fractions().
  std::vector<double> cdf_us;
};

// Where a run sits in the matrix.
struct CellKey {
  std::string medium;
  int64_t warehouses = 1;
  std::string kind;
  uint32_t terminals = 1;
  uint32_t connections = 0;  // MatrixCell::connections
  bool operator==(const CellKey&) const = default;
};

// The connections an aup cell's terminals use: MatrixCell::connections, or
// one per terminal; 0 for SQLite (server_connections).
uint32_t connections_of(const CellKey& k);

// The cell's labels as JSON members: medium, warehouses, kind, terminals,
// connections (null for SQLite).
std::string cell_labels_json(const CellKey& k);

// " over 8 connections" for an aup cell whose terminals share fewer
// connections than they are; "" for any other.
std::string connections_text(const CellKey& k);

struct RunRecord {
  CellKey cell;
  uint32_t rep = 1;  // 1-based
  RunFigures figures;
  std::string json;  // measured_json with the cell's labels
};

// One template load.
struct LoadRecord {
  std::string medium;
  int64_t warehouses = 1;
  std::string layout;  // "aup", "sqlite", "sqlite-1k"
  std::string kind;    // the backend that loaded it
  double seconds = 0;  // load() and close()
  uint64_t bytes = 0;  // the template's files
};

// A run left out because its consistency check failed.
struct FailedRun {
  CellKey cell;
  uint32_t rep = 1;
  std::vector<std::string> problems;
};

struct MatrixResults {
  std::vector<RunRecord> runs;  // consistent runs only, in the order they ran
  std::vector<LoadRecord> loads;
  std::vector<FailedRun> failed;
};

// The cumulative fractions at which a run's latency CDF is kept: evenly
// spaced through the body, then denser towards the tail (0.99 .. max), since
// the plot's interest is in both.
const std::vector<double>& cdf_fractions();

RunFigures figures_of(const Measured& m);

// A cell's medians over its repetitions (each figure on its own; the CDF
// fraction by fraction); nullopt when no run of it is in `results`.
struct CellFigures {
  RunFigures median;
  double transactions_per_s_min = 0, transactions_per_s_max = 0;
  uint32_t runs = 0;
};
std::optional<CellFigures> cell_figures(const MatrixResults& results, const CellKey& cell);

// Every cell of the options in report order: medium, W, then o.cells.
std::vector<CellKey> cell_keys(const MatrixOptions& o);

// A figure of aup's set against another's, and the goal it answers to.
struct Goal {
  double bound = 0;
  bool at_least = true;  // value >= bound; else value <= bound
  bool met(double value) const { return at_least ? value >= bound : value <= bound; }
};

struct Ratio {
  std::string medium;
  int64_t warehouses = 1;
  uint32_t terminals = 1;  // aup's
  uint32_t connections = 0;  // aup's, as CellKey
  std::string what;        // "tx/s over the best sqlite-tuned", ...
  std::string detail;      // both sides' figures, for a person
  double value = 0;
  std::optional<Goal> goal;
};

// Per (medium, W): aup's tx/s at each of its terminal counts over the best
// sqlite-tuned cell and over sqlite-grouped at the same count; aup's
// resident memory over its state bytes. Goals: in RAM >= 4x the best tuned
// SQLite; on disk >= 7x sqlite-grouped at 64 terminals; resident <= 2.2x
// state. Cells with no consistent run are left out.
std::vector<Ratio> ratios(const MatrixOptions& o, const MatrixResults& results);

// "ram W=1, aup at 16 terminals: 4.03x ...; goal ≥ 4.0x: met".
std::string ratio_text(const Ratio& r);

}  // namespace aup::tpcc
