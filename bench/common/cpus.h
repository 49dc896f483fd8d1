// Pinning on a 2-core machine: the load generator on one CPU, the system
// under test on the other (bench/tpcc: the terminals' driver, and the aup
// server process or this process when SQLite runs in it; bench/server: its
// clients, and the aup server).
#pragma once

#include <optional>
#include <string>

namespace aup::bench {

struct CpuPlan {
  std::string client;  // a `taskset -c` list: "0"
  std::string server;  // "1"
};

// "CLIENT:SERVER" ("0:1") → a plan; "none" → nothing; "auto" → 0:1 when at
// least two CPUs are online, else nothing. Throws std::invalid_argument on
// anything else.
std::optional<CpuPlan> parse_cpu_plan(const std::string& text);

// Pins the calling thread (and so every thread it starts later) to the CPUs
// of `list` ("1", "0-1", "0,2"); throws std::runtime_error when the kernel
// refuses.
void pin_this_thread(const std::string& list);

}  // namespace aup::bench
