#include "bench/common/cpus.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace aup::bench {

namespace {

// A CPU number as taskset takes it: digits only, below CPU_SETSIZE.
int cpu_number(const std::string& text) {
  if (text.empty() || text.size() > 4 || text.find_first_not_of("0123456789") != std::string::npos) {
    throw std::invalid_argument("bad CPU number `" + text + "`");
  }
  int n = std::stoi(text);
  if (n >= CPU_SETSIZE) throw std::invalid_argument("CPU number too large: " + text);
  return n;
}

// "1", "0-1", "0,2-3" → a set.
cpu_set_t cpu_set(const std::string& list) {
  cpu_set_t set;
  CPU_ZERO(&set);
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t comma = list.find(',', begin);
    std::string item = list.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    size_t dash = item.find('-');
    int low = cpu_number(item.substr(0, dash));
    int high = dash == std::string::npos ? low : cpu_number(item.substr(dash + 1));
    if (high < low) throw std::invalid_argument("bad CPU range `" + item + "`");
    for (int c = low; c <= high; ++c) CPU_SET(c, &set);
    if (comma == std::string::npos) break;
    begin = comma + 1;
  }
  return set;
}

}  // namespace

std::optional<CpuPlan> parse_cpu_plan(const std::string& text) {
  if (text == "none") return std::nullopt;
  if (text == "auto") {
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) return std::nullopt;
    return CpuPlan{"0", "1"};
  }
  size_t colon = text.find(':');
  if (colon == std::string::npos) throw std::invalid_argument("--cpus needs CLIENT:SERVER, `auto` or `none`");
  CpuPlan plan{text.substr(0, colon), text.substr(colon + 1)};
  cpu_set(plan.client);  // validates both
  cpu_set(plan.server);
  return plan;
}

void pin_this_thread(const std::string& list) {
  cpu_set_t set = cpu_set(list);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    throw std::runtime_error("cannot pin to CPUs " + list + ": " + std::strerror(errno));
  }
}

}  // namespace aup::bench
