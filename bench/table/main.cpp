// table_bench: aup's B+tree (vm/btree.h) against std::map at several
// table sizes: random find, inserts, field writes with and without a
// snapshot, rank. See docs/benchmarks.md, "Table seek".
//
// Usage: table_bench [--sizes 1000,30000,300000,1000000] [--reps 7]
//                    [--probes 1048576] [--seed 92] [--out DIR] [--smoke]
//
// --smoke runs two small sizes once each, checks that both sides agree and
// every figure is a positive number, and writes nothing (the meson test).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/common/program.h"
#include "bench/table/measure.h"
#include "bench/table/report.h"

namespace {

using aup::bench::table::Options;

constexpr const char* kProgram = "table_bench";
// The largest value any flag takes.
constexpr uint64_t kMaxCount = uint64_t{1} << 32;

std::vector<size_t> parse_sizes(const aup::bench::CommandLine& args, const std::string& s) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(args.count(s.substr(start, comma - start), 1, kMaxCount));
    start = comma + 1;
  }
  return out;
}

Options parse_args(int argc, char** argv) {
  aup::bench::CommandLine args(argc, argv, kProgram,
                               "[--sizes N,N,...] [--reps N] [--probes N] [--seed N] [--out DIR] [--smoke]");
  Options o;
  args.parse(o, 1, kMaxCount, [&](const std::string& a) {
    if (a == "--smoke") {
      o.smoke = true;
      o.sizes = {1000, 4000};
      o.reps = 2;
      o.probes = 20000;
    } else if (a == "--sizes") {
      o.sizes = parse_sizes(args, args.value());
    } else if (a == "--probes") {
      o.probes = args.count_value(1, kMaxCount);
    } else {
      return false;
    }
    return true;
  });
  return o;
}

// The smoke test's check: every figure present, positive and finite.
bool sane(const std::vector<aup::bench::table::SizeResult>& sizes, const Options& o) {
  for (const auto& s : sizes) {
    if (s.ops.size() != 8 || s.depth == 0) return false;
    for (const auto& r : s.ops) {
      if (r.aup_ns.size() != o.reps || r.base_ns.size() != o.reps) return false;
      for (double x : r.aup_ns) {
        if (!std::isfinite(x) || x <= 0) return false;
      }
      for (double x : r.base_ns) {
        if (!std::isfinite(x) || x <= 0) return false;
      }
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  namespace tb = aup::bench::table;
  Options o = parse_args(argc, argv);
  return aup::bench::run_benchmark(kProgram, [&] {
    aup::bench::Environment env = aup::bench::environment();
    std::vector<tb::SizeResult> sizes;
    for (size_t rows : o.sizes) {
      std::fprintf(stderr, "table_bench: %zu rows...\n", rows);
      sizes.push_back(tb::measure_size(rows, o));
    }
    aup::bench::publish(o.out_dir, "table", tb::to_json(env, o, sizes), tb::to_markdown(env, o, sizes));
    if (o.smoke && !sane(sizes, o)) return aup::bench::smoke_failure(kProgram);
    return 0;
  });
}
