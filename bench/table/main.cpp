// table_bench: aup's B+tree (vm/btree.h) against std::map at several
// table sizes: random find, inserts, field writes with and without a
// snapshot, rank. See docs/benchmarks.md, "Table seek".
//
// Usage: table_bench [--sizes 1000,30000,300000,1000000] [--reps 7]
//                    [--probes 1048576] [--seed 92] [--out DIR] [--smoke]
//
// --smoke runs two small sizes once each, checks that both sides agree and
// every figure is a positive number, and writes nothing (the meson test).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "measure.h"
#include "report.h"

namespace {

using aup::bench::table::Options;

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "table_bench: %s\nusage: table_bench [--sizes N,N,...] [--reps N] [--probes N] [--seed N] "
               "[--out DIR] [--smoke]\n",
               why.c_str());
  std::exit(2);
}

size_t parse_count(const std::string& s, const char* flag) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v == 0 || v > (1ull << 32)) usage(fmt::format("bad value for {}: `{}`", flag, s));
  return static_cast<size_t>(v);
}

std::vector<size_t> parse_sizes(const std::string& s) {
  std::vector<size_t> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(parse_count(s.substr(start, comma - start), "--sizes"));
    start = comma + 1;
  }
  return out;
}

Options parse_args(int argc, char** argv) {
  Options o;
  std::string command = "table_bench";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    command += " " + a;
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(a + " needs a value");
      command += std::string(" ") + argv[i + 1];
      return argv[++i];
    };
    if (a == "--smoke") {
      o.smoke = true;
      o.sizes = {1000, 4000};
      o.reps = 2;
      o.probes = 20000;
    } else if (a == "--sizes") {
      o.sizes = parse_sizes(value());
    } else if (a == "--reps") {
      o.reps = static_cast<uint32_t>(parse_count(value(), "--reps"));
    } else if (a == "--probes") {
      o.probes = parse_count(value(), "--probes");
    } else if (a == "--seed") {
      o.seed = parse_count(value(), "--seed");
    } else if (a == "--out") {
      o.out_dir = value();
    } else {
      usage("unknown argument `" + a + "`");
    }
  }
  o.command = command;
  return o;
}

// The smoke test's check: every figure present, positive and finite.
bool sane(const std::vector<aup::bench::table::SizeResult>& sizes, const Options& o) {
  for (const auto& s : sizes) {
    if (s.ops.size() != 7 || s.depth == 0) return false;
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
  try {
    tb::Environment env = tb::environment();
    std::vector<tb::SizeResult> sizes;
    for (size_t rows : o.sizes) {
      std::fprintf(stderr, "table_bench: %zu rows...\n", rows);
      sizes.push_back(tb::measure_size(rows, o));
    }
    std::string md = tb::to_markdown(env, o, sizes);
    if (!o.out_dir.empty()) {
      tb::write_file(o.out_dir, "table.json", tb::to_json(env, o, sizes));
      tb::write_file(o.out_dir, "table.md", md);
    }
    std::fputs(md.c_str(), stdout);
    if (o.smoke && !sane(sizes, o)) {
      std::fprintf(stderr, "table_bench: a figure is missing or not a positive number\n");
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "table_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
