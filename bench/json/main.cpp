// json_bench: parsing request lines with aup's own JSON reader
// (runtime/json.h) against simdjson On-Demand and DOM, and reading numbers
// bit for bit. See docs/benchmarks.md, "JSON parsing".
//
// Usage: json_bench [--lines 200000] [--reps 7] [--numbers 2000] [--seed 92]
//                   [--out DIR] [--smoke]
//
// --smoke: a few thousand lines, one repetition; checks that the parsers
// agree on every line and every number, writes nothing (the meson test).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "bench/common/program.h"
#include "bench/json/corpus.h"
#include "bench/json/measure.h"
#include "bench/json/numbers.h"
#include "bench/json/parsers.h"
#include "bench/json/report.h"

namespace {

namespace bj = aup::bench::json;

constexpr const char* kProgram = "json_bench";
// The largest value any flag takes.
constexpr uint64_t kMaxCount = uint64_t{1} << 32;

bj::Options parse_args(int argc, char** argv) {
  aup::bench::CommandLine args(argc, argv, kProgram,
                               "[--lines N] [--reps N] [--numbers N] [--seed N] [--out DIR] [--smoke]");
  bj::Options o;
  args.parse(o, 1, kMaxCount, [&](const std::string& a) {
    if (a == "--smoke") {
      o.smoke = true;
      o.lines = 2000;
      o.reps = 1;
      o.numbers_per_kind = 300;
    } else if (a == "--lines") {
      o.lines = args.count_value(1, kMaxCount);
    } else if (a == "--numbers") {
      o.numbers_per_kind = args.count_value(1, kMaxCount);
    } else {
      return false;
    }
    return true;
  });
  return o;
}

bool sane(const bj::Results& r, const bj::Options& o) {
  for (const bj::CorpusResult& c : r.corpora) {
    for (const bj::ParserTiming& t : c.parsers) {
      if (t.ns_per_line.size() != o.reps) return false;
      for (double x : t.ns_per_line) {
        if (!std::isfinite(x) || x <= 0) return false;
      }
    }
  }
  return r.corpora.size() == 2 && !r.numbers.empty();
}

}  // namespace

int main(int argc, char** argv) {
  bj::Options o = parse_args(argc, argv);
  return aup::bench::run_benchmark(kProgram, [&] {
    aup::bench::Environment env = aup::bench::environment();
    size_t padding = bj::simdjson_padding();
    bj::AupParser aup;
    std::unique_ptr<bj::Parser> ondemand = bj::make_ondemand_parser();
    std::unique_ptr<bj::Parser> dom = bj::make_dom_parser();
    std::vector<bj::Parser*> parsers = {&aup, ondemand.get()};
#ifdef AUP_HAVE_ONDEMAND_V3
    std::unique_ptr<bj::Parser> ondemand_v3 = bj::make_ondemand_v3_parser();
    if (ondemand_v3) {
      parsers.push_back(ondemand_v3.get());
    } else {
      std::fprintf(stderr, "json_bench: this CPU cannot run x86-64-v3 code; ondemand_v3 is left out\n");
    }
#endif
    parsers.push_back(dom.get());

    bj::Results r;
    for (const bj::Corpus& c : {bj::make_transfers(o.lines, o.seed, padding),
                                bj::make_new_orders(o.lines, o.seed + 1, padding)}) {
      std::fprintf(stderr, "json_bench: %s, %zu lines...\n", c.name.c_str(), c.lines.size());
      r.corpora.push_back(bj::measure_corpus(c, parsers, o));
    }
    std::vector<double> values = bj::make_doubles(o.numbers_per_kind, o.seed + 2);
    r.number_values = values.size();
    r.numbers = bj::check_numbers(values, parsers, padding);

    aup::bench::publish(o.out_dir, "json", bj::to_json(env, o, r), bj::to_markdown(env, o, r));
    if (o.smoke && !sane(r, o)) return aup::bench::smoke_failure(kProgram);
    // aup's reader must read every number exactly; simdjson's mismatches
    // are a finding to report, not a failure of this program.
    for (const bj::NumberResult& n : r.numbers) {
      if (n.parser == std::string("aup") && n.mismatched) {
        std::fprintf(stderr, "json_bench: aup misread %zu numbers printed with %s\n", n.mismatched, n.format.c_str());
        return 1;
      }
    }
    return 0;
  });
}
