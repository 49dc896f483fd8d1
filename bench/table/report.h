// The table benchmark's results: JSON (every repetition) and a Markdown
// summary, which main.cpp publishes as table.json and table.md
// (common/report.h).
#pragma once

#include <string>
#include <vector>

#include "bench/common/report.h"
#include "bench/table/measure.h"

namespace aup::bench::table {

std::string to_json(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes);
std::string to_markdown(const Environment& env, const Options& o, const std::vector<SizeResult>& sizes);

}  // namespace aup::bench::table
