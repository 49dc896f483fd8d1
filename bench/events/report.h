// The events benchmark's results: JSON (every run) and a Markdown summary,
// written as events.json and events.md (through a .tmp file and a rename).
#pragma once

#include <string>

#include "measure.h"

namespace aup::bench::events {

struct Environment {
  std::string date;     // UTC, ISO 8601
  std::string machine;  // CPU model, online CPUs, kernel
  std::string build;    // how the aup under test was built (meson build type)
  double load_average = 0;  // 1-minute load when the run started
};

Environment environment();

std::string to_json(const Environment& env, const Options& o, const Results& r);
std::string to_markdown(const Environment& env, const Options& o, const Results& r);

// Writes `text` to dir/name atomically; throws std::runtime_error on failure.
void write_file(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace aup::bench::events
