// json_bench: parsing request lines with aup's own JSON reader
// (runtime/json.h) against simdjson On-Demand and DOM, and reading numbers
// bit for bit. See docs/benchmarks.md, "JSON parsing".
//
// Usage: json_bench [--lines 200000] [--reps 7] [--numbers 2000] [--seed 92]
//                   [--out DIR] [--smoke]
//
// --smoke: a few thousand lines, one repetition; checks that the parsers
// agree on every line and every number, writes nothing (the meson test).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "corpus.h"
#include "measure.h"
#include "numbers.h"
#include "parsers.h"
#include "report.h"

namespace {

namespace bj = aup::bench::json;

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "json_bench: %s\nusage: json_bench [--lines N] [--reps N] [--numbers N] [--seed N] [--out DIR] "
               "[--smoke]\n",
               why.c_str());
  std::exit(2);
}

uint64_t parse_count(const std::string& s, const std::string& flag) {
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v == 0 || v > (1ull << 32)) usage(fmt::format("bad value for {}: `{}`", flag, s));
  return v;
}

bj::Options parse_args(int argc, char** argv) {
  bj::Options o;
  std::string command = "json_bench";
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
      o.lines = 2000;
      o.reps = 1;
      o.numbers_per_kind = 300;
    } else if (a == "--lines") {
      o.lines = parse_count(value(), a);
    } else if (a == "--reps") {
      o.reps = static_cast<uint32_t>(parse_count(value(), a));
    } else if (a == "--numbers") {
      o.numbers_per_kind = parse_count(value(), a);
    } else if (a == "--seed") {
      o.seed = parse_count(value(), a);
    } else if (a == "--out") {
      o.out_dir = value();
    } else {
      usage("unknown argument `" + a + "`");
    }
  }
  o.command = command;
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
  try {
    bj::Environment env = bj::environment();
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

    std::string md = bj::to_markdown(env, o, r);
    if (!o.out_dir.empty()) {
      bj::write_file(o.out_dir, "json.json", bj::to_json(env, o, r));
      bj::write_file(o.out_dir, "json.md", md);
    }
    std::fputs(md.c_str(), stdout);
    if (o.smoke && !sane(r, o)) {
      std::fprintf(stderr, "json_bench: a figure is missing or not a positive number\n");
      return 1;
    }
    // aup's reader must read every number exactly; simdjson's mismatches
    // are a finding to report, not a failure of this program.
    for (const bj::NumberResult& n : r.numbers) {
      if (n.parser == std::string("aup") && n.mismatched) {
        std::fprintf(stderr, "json_bench: aup misread %zu numbers printed with %s\n", n.mismatched, n.format.c_str());
        return 1;
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "json_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
