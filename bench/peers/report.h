// The peers benchmark's results: JSON (every run of every repetition, and
// the bare fdatasync rates) and a Markdown summary (medians per system and
// client count, aup over the best of the others, aup's one client over the
// fdatasync rate), which main.cpp publishes as peers.json and peers.md.
#pragma once

#include <string>

#include "bench/common/report.h"
#include "bench/peers/options.h"
#include "bench/peers/sweep.h"

namespace aup::bench::peers {

// The versions of the programs compared ("redis-server v=7.0.15 ..."), for
// the report; read once before the runs.
struct Versions {
  std::string redis;
  std::string tarantool;
};

std::string to_json(const Environment& env, const Options& o, const Versions& v, const Sweep& sweep);
std::string to_markdown(const Environment& env, const Options& o, const Versions& v, const Sweep& sweep);

}  // namespace aup::bench::peers
