// The events benchmark's results: JSON (every run) and a Markdown summary,
// which main.cpp publishes as events.json and events.md (common/report.h).
// The build recorded is Environment::build_type: the aup under test is
// built in the same build as this program.
#pragma once

#include <string>

#include "bench/common/report.h"
#include "bench/events/measure.h"

namespace aup::bench::events {

std::string to_json(const Environment& env, const Options& o, const Results& r);
std::string to_markdown(const Environment& env, const Options& o, const Results& r);

}  // namespace aup::bench::events
