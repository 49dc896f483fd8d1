// The matrix (docs/benchmarks.md, "TPC-C"): for each medium (RAM: a
// directory in /dev/shm; disk: one on the work volume) and each W (1, 4):
// aup at 16 and 64 terminals (with --connections, also with the terminals
// sharing fewer connections), sqlite and sqlite-tuned at 1 and 4, and
// sqlite-grouped at 16 and 64. Each (medium, W, storage layout) is loaded
// once into a template directory; every run starts from a fresh copy of it,
// so every run begins from the same rows. After each run: consistency
// (a run that fails it is an error, never reported), counts, memory.
// Results: bench/results/tpcc.json, tpcc.md, and plots (throughput by
// terminals, latency CDF) as SVG.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/tpcc/backend.h"
#include "bench/common/cpus.h"

namespace aup::tpcc {

struct MatrixMedium {
  std::string label;  // "ram", "disk"
  std::string dir;    // templates and runs live in a fresh directory inside
  bool on_disk = false;
};

struct MatrixCell {
  std::string kind;   // a backend kind
  uint32_t terminals;
  // aup: BackendConfig::connections (0: a connection per terminal); always
  // 0 for SQLite.
  uint32_t connections = 0;
};

struct MatrixOptions {
  std::vector<MatrixMedium> media;
  std::vector<int64_t> warehouses{1, 4};
  std::vector<MatrixCell> cells;  // default: default_cells()
  double seconds = 20;
  double warmup = 2;
  uint64_t seed = 1;
  uint32_t reps = 1;
  std::string aup;     // the aup executable
  std::string module;  // examples/tpcc/tpcc.aup
  uint32_t io_threads = 0;
  std::string engine;  // the aup server's --engine; "": none (aup's default)
  std::optional<bench::CpuPlan> cpus;
  std::string out_dir;  // bench/results; empty: write nothing
  std::string command;  // as typed, for the report
};

// aup 16, 64; sqlite 1, 4; sqlite-tuned 1, 4; sqlite-grouped 16, 64.
std::vector<MatrixCell> default_cells();

// `cells` with each aup cell repeated once per value of `connections`, in
// order: its terminals sharing that many connections, or a connection per
// terminal for a value at or above its terminals (said once, however many
// values say it). Empty `connections`: `cells` as they are.
std::vector<MatrixCell> with_connections(const std::vector<MatrixCell>& cells,
                                         const std::vector<uint32_t>& connections);

// Runs the matrix, printing a progress line per run to stderr and the
// Markdown table to stdout; writes the results when out_dir is set.
// Returns 0, or 1 when any run failed its consistency check (the failure is
// printed and the run left out of the results).
int run_matrix(const MatrixOptions& o);

}  // namespace aup::tpcc
