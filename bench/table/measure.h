// One table size measured: every operation on aup's B+tree and on its
// baseline, in alternating order (aup first in even repetitions, the
// baseline first in odd ones), with the checksums of the two sides
// compared after every pair.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/common/measure.h"
#include "bench/common/program.h"

namespace aup::bench::table {

// reps counts repetitions of every pair; out_dir gets table.json and
// table.md.
struct Options : RunOptions {
  std::vector<size_t> sizes{1000, 30000, 300000, 1000000};
  size_t probes = size_t{1} << 20;  // operations per timed batch (find, set, rank)
};

struct OpResult {
  std::string name;
  std::string aup;       // what the aup side does
  std::string baseline;  // what the baseline does
  // ns per operation, one per repetition: thread CPU time (the figure
  // reported: this machine is shared, and CPU time leaves out the time
  // other processes ran) and wall time (kept in the JSON).
  std::vector<double> aup_ns, base_ns;
  std::vector<double> aup_wall_ns, base_wall_ns;
};

struct SizeResult {
  size_t rows = 0;
  uint32_t depth = 0;              // levels of aup's tree
  uint32_t leaf_capacity = 0;      // rows per aup leaf
  double aup_bytes_per_row = 0;    // heap bytes per row after random inserts
  double map_bytes_per_row = 0;
  // A machine reference, ns by repetition: one load that depends on the
  // one before, at a random line of a buffer as large as aup's tree (a
  // pointer chase). The price of one cache and TLB miss at this size.
  std::vector<double> load_latency_ns;
  std::vector<OpResult> ops;
};

// Throws std::runtime_error when the two sides disagree.
SizeResult measure_size(size_t rows, const Options& o);

// The median over repetitions of aup / baseline within a repetition
// (medians of single series: median() in common/measure.h).
double ratio_median(const OpResult& r);

}  // namespace aup::bench::table
