// The server benchmark's results: JSON (every run) and a Markdown summary
// (medians per store and connection count, and durable over memory), which
// main.cpp publishes as server.json and server.md (common/report.h).
#pragma once

#include <string>
#include <vector>

#include "bench/common/report.h"
#include "bench/server/options.h"
#include "bench/server/sweep.h"

namespace aup::bench::server {

std::string to_json(const Environment& env, const Options& o, const std::vector<Sample>& samples);
std::string to_markdown(const Environment& env, const Options& o, const std::vector<Sample>& samples);

}  // namespace aup::bench::server
