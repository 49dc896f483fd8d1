#include "bench/events/measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace aup::bench::events {

namespace {

Command aup_command(const Options& o, const Workload& w) {
  return Command{{o.aup, "run", w.module, "--memory"}, w.input, true, "/dev/null"};
}

// Counts the answers in an output file: lines, ok, failed, and the sum of
// every `"count":N` (ledger windows).
struct Answers {
  uint64_t lines = 0, ok = 0, failed = 0, count_sum = 0;
};

Answers read_answers(const std::string& path) {
  std::ifstream in(path);
  Answers a;
  std::string line;
  while (std::getline(in, line)) {
    ++a.lines;
    if (line.find("\"ok\":true") != std::string::npos) ++a.ok;
    if (line.find("\"ok\":false") != std::string::npos) ++a.failed;
    size_t c = line.find("\"count\":");
    if (c != std::string::npos) a.count_sum += std::strtoull(line.c_str() + c + 8, nullptr, 10);
  }
  return a;
}

void check(WorkloadResult& r, const Answers& a) {
  const Workload& w = r.w;
  r.responses = a.lines;
  r.ok = a.ok;
  r.failed = a.failed;
  if (a.lines != w.requests || a.ok != w.expect_ok || a.failed != w.expect_failed ||
      a.count_sum != w.expect_count_sum) {
    throw std::runtime_error(fmt::format(
        "{}: aup answered {} lines, {} ok, {} failed, count sum {}; expected {}, {}, {}, {}", w.name, a.lines, a.ok,
        a.failed, a.count_sum, w.requests, w.expect_ok, w.expect_failed, w.expect_count_sum));
  }
}

}  // namespace

Results measure(const Options& o, const std::vector<Workload>& workloads) {
  Results res;
  for (const Workload& w : workloads) {
    WorkloadResult r;
    r.w = w;
    // The checked run; it also warms the page cache for the timed ones.
    Command c = aup_command(o, w);
    c.output = w.input + ".out";
    run(c);
    check(r, read_answers(c.output));
    std::remove(c.output.c_str());
    res.workloads.push_back(std::move(r));
  }
  std::vector<std::string> modules;
  for (const Workload& w : workloads) {
    if (std::find(modules.begin(), modules.end(), w.module) == modules.end()) modules.push_back(w.module);
  }
  for (const std::string& m : modules) res.startups.push_back(StartupResult{m, {}});

  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    std::fprintf(stderr, "events_bench: repetition %u of %u\n", rep + 1, o.reps);
    for (WorkloadResult& r : res.workloads) {
      const Workload& w = r.w;
      struct Slot {
        Command c;
        std::vector<Timing>* into;
      };
      std::vector<Slot> slots = {
          {Command{{"cat"}, w.input, true, "/dev/null"}, &r.pipe},
          {Command{{"wc", "-l"}, w.input, true, "/dev/null"}, &r.lines},
          {aup_command(o, w), &r.aup},
      };
      std::rotate(slots.begin(), slots.begin() + rep % slots.size(), slots.end());
      for (Slot& s : slots) s.into->push_back(run(s.c));
    }
    for (StartupResult& s : res.startups) {
      s.runs.push_back(run(Command{{o.aup, "run", s.module, "--memory"}, "/dev/null", false, "/dev/null"}));
    }
  }
  return res;
}

}  // namespace aup::bench::events
