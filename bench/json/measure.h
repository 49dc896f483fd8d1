// Timing the parsers on request lines: every parser over every line of a
// corpus is one timed pass; in each repetition the parsers take turns in a
// rotating order. Before timing, every line is walked by every parser and
// the per-line checksums must be equal.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/common/measure.h"
#include "bench/common/program.h"
#include "bench/json/corpus.h"
#include "bench/json/numbers.h"
#include "bench/json/parsers.h"

namespace aup::bench::json {

// out_dir gets json.json and json.md.
struct Options : RunOptions {
  size_t lines = 200000;  // per corpus
  size_t numbers_per_kind = 2000;
};

struct ParserTiming {
  std::string parser;  // Parser::id()
  std::string label;
  std::vector<double> ns_per_line;       // thread CPU time, one per repetition
  std::vector<double> wall_ns_per_line;  // wall time, same passes
};

struct CorpusResult {
  std::string corpus;
  size_t lines = 0;
  size_t text_bytes = 0;
  std::string example;  // the first line
  std::vector<ParserTiming> parsers;  // in the order given
};

// Throws std::runtime_error when a parser fails or the checksums differ.
CorpusResult measure_corpus(const Corpus& c, const std::vector<Parser*>& parsers, const Options& o);

}  // namespace aup::bench::json
