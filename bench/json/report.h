// The JSON benchmark's results: JSON (every repetition, every mismatch
// example) and a Markdown summary, which main.cpp publishes as json.json and
// json.md (common/report.h). Both name the simdjson version beside the
// environment.
#pragma once

#include <string>
#include <vector>

#include "bench/common/report.h"
#include "bench/json/measure.h"
#include "bench/json/numbers.h"

namespace aup::bench::json {

struct Results {
  std::vector<CorpusResult> corpora;
  std::vector<NumberResult> numbers;
  size_t number_values = 0;
};

std::string to_json(const Environment& env, const Options& o, const Results& r);
std::string to_markdown(const Environment& env, const Options& o, const Results& r);

}  // namespace aup::bench::json
