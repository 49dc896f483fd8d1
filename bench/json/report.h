// The JSON benchmark's results: JSON (every repetition, every mismatch
// example) and a Markdown summary, written as json.json and json.md
// (through a .tmp file and a rename).
#pragma once

#include <string>
#include <vector>

#include "measure.h"
#include "numbers.h"

namespace aup::bench::json {

struct Environment {
  std::string date;     // UTC, ISO 8601
  std::string machine;  // CPU model, online CPUs, kernel
  std::string compiler;
  std::string build;    // meson build type, asserts on or off
  std::string simdjson;  // version and implementations
  double load_average = 0;  // 1-minute load when the run started
};

Environment environment();

struct Results {
  std::vector<CorpusResult> corpora;
  std::vector<NumberResult> numbers;
  size_t number_values = 0;
};

std::string to_json(const Environment& env, const Options& o, const Results& r);
std::string to_markdown(const Environment& env, const Options& o, const Results& r);

// Writes `text` to dir/name atomically; throws std::runtime_error on failure.
void write_file(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace aup::bench::json
