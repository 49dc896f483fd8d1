// The table benchmark's results: JSON (every repetition) and a Markdown
// summary, written to `out_dir` as table.json and table.md (through a .tmp
// file and a rename, so a half-written result never replaces a whole one).
#pragma once

#include <string>
#include <vector>

#include "measure.h"

namespace aup::bench::table {

struct Environment {
  std::string date;     // UTC, ISO 8601
  std::string machine;  // CPU model, online CPUs, kernel
  std::string compiler;
  std::string build;    // meson build type, asserts on or off
  double load_average = 0;  // 1-minute load when the run started
};

Environment environment();

std::string to_json(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes);
std::string to_markdown(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes);

// Writes `text` to dir/name atomically; throws std::runtime_error on failure.
void write_file(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace aup::bench::table
