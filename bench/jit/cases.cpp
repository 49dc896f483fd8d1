#include "bench/jit/cases.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string_view>

#include "bench/common/report.h"

namespace aup::bench::jit {

namespace {

// splitmix64: the tables case's random rows, the same for every seed on
// every machine.
class Rng {
 public:
  explicit Rng(uint64_t seed) : s_(seed) {}
  uint64_t next() {
    uint64_t z = (s_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // In [1, n].
  uint64_t one_to(uint64_t n) { return 1 + next() % n; }

 private:
  uint64_t s_;
};

class Writer {
 public:
  explicit Writer(const std::string& path) : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw std::runtime_error("cannot write " + path);
  }
  void line(const std::string& s) {
    out_ << s << '\n';
    ++lines_;
  }
  uint64_t close() {
    out_.flush();
    if (!out_) throw std::runtime_error("cannot write " + path_);
    out_.close();
    return lines_;
  }

 private:
  std::string path_;
  std::ofstream out_;
  uint64_t lines_ = 0;
};

// aup run MODULE --memory --stats FLAGS, with the side's engine.
std::vector<std::string> aup_argv(const Options& o, const std::string& module, const std::vector<std::string>& flags,
                                  const Side& side) {
  std::vector<std::string> argv = {o.aup, "run", module, "--memory", "--stats"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::vector<std::string> e = side.args();
  argv.insert(argv.end(), e.begin(), e.end());
  return argv;
}

Run run_aup(const Options& o, const EventCase& c, const Side& side, const std::string& input,
            const std::string& output, const std::string& errors) {
  Child child{aup_argv(o, c.module, c.flags, side), input, output, errors};
  Run r;
  r.usage = run_child(child);
  r.jit_stats = jit_stats(read_text(errors));
  return r;
}

struct Answers {
  uint64_t lines = 0;
  uint64_t ok = 0;      // with "ok":true
  uint64_t failed = 0;  // not ok, with the expected error message
};

// Whether `text` holds `needle` between `from` and `to` (a search that
// stops at `to`, so that a line without it costs no more than its length).
bool holds(const std::string& text, const std::string& needle, size_t from, size_t to) {
  return std::string_view(text).substr(from, to - from).find(needle) != std::string_view::npos;
}

// Counts the answer lines of `text`, those that are ok and those that
// failed with `expected_error` (none when it is "").
Answers count_answers(const std::string& text, const std::string& expected_error) {
  Answers a;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    ++a.lines;
    if (holds(text, "\"ok\":true", at, end)) {
      ++a.ok;
    } else if (!expected_error.empty() && holds(text, expected_error, at, end)) {
      ++a.failed;
    }
    at = end + 1;
  }
  return a;
}

}  // namespace

std::string jit_stats(const std::string& text) {
  const std::string prefix = "aup: jit ";
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (text.compare(at, prefix.size(), prefix) == 0) return text.substr(at + prefix.size(), end - at - prefix.size());
    at = end + 1;
  }
  return "";
}

Run startup_run(const Options& o, const std::string& module, const Side& side, const std::string& errors) {
  Run r;
  r.usage = run_child(Child{aup_argv(o, module, {}, side), "/dev/null", "/dev/null", errors});
  r.jit_stats = jit_stats(read_text(errors));
  return r;
}

EventCase make_compute(const std::string& dir, const Options& o) {
  EventCase c;
  c.name = "compute";
  c.module = o.compute;
  c.work = dir + "/compute.ndjson";
  c.baseline = dir + "/compute-noop.ndjson";
  c.events = o.compute_events;
  Writer work(c.work), base(c.baseline);
  for (uint64_t i = 0; i < o.compute_events; ++i) {
    std::string args = fmt::format("{{\"rounds\":{},\"seed\":{}}}", o.rounds, (o.seed + i * 7919) % 1'000'003);
    work.line(fmt::format("{{\"event\":\"crunch\",\"args\":{},\"id\":{}}}", args, i + 1));
    base.line(fmt::format("{{\"event\":\"noop\",\"args\":{},\"id\":{}}}", args, i + 1));
  }
  c.requests = work.close();
  base.close();
  c.shape = fmt::format("{} `crunch` events of {} loop rounds each (bench/jit/compute.aup)", grouped(c.events),
                        grouped(o.rounds));
  return c;
}

EventCase make_tables(const std::string& dir, const Options& o) {
  EventCase c;
  c.name = "tables";
  c.module = o.tables;
  c.work = dir + "/tables.ndjson";
  c.baseline = dir + "/tables-noop.ndjson";
  c.events = o.touches;
  Writer work(c.work), base(c.baseline);
  std::string fill = fmt::format("{{\"event\":\"fill\",\"args\":{{\"from\":1,\"to\":{}}},\"id\":0}}", o.items + 1);
  work.line(fill);
  base.line(fill);
  Rng rng(o.seed);
  for (uint64_t i = 0; i < o.touches; ++i) {
    std::string args = fmt::format("{{\"id\":{},\"other\":{},\"width\":{}}}", rng.one_to(o.items),
                                   rng.one_to(o.items), o.width);
    work.line(fmt::format("{{\"event\":\"touch\",\"args\":{},\"id\":{}}}", args, i + 1));
    base.line(fmt::format("{{\"event\":\"noop\",\"args\":{},\"id\":{}}}", args, i + 1));
  }
  c.requests = work.close();
  base.close();
  c.shape = fmt::format(
      "{} items added by one `fill`, then {} `touch` events at random items, each over a view of {} rows "
      "(bench/jit/tables.aup)",
      grouped(o.items), grouped(c.events), o.width);
  return c;
}

EventResult measure_events(const Options& o, const EventCase& c) {
  EventResult r;
  r.c = c;
  const std::string errors = c.work + ".err";
  // The checked runs, which also warm the page cache and the binaries.
  std::array<std::string, 2> answers;
  for (size_t s = 0; s < 2; ++s) {
    std::string out = c.work + ".out";
    run_aup(o, c, o.sides[s], c.work, out, errors);
    answers[s] = read_text(out);
    std::remove(out.c_str());
    Answers a = count_answers(answers[s], c.expected_error);
    if (a.lines != c.requests || a.ok + a.failed != c.requests) {
      throw std::runtime_error(fmt::format("{} ({}): {} answers, {} ok, {} expected failures, to {} requests",
                                           c.name, o.sides[s].label(), a.lines, a.ok, a.failed, c.requests));
    }
    r.ok = a.ok;
    r.failed = a.failed;
  }
  if (answers[0] != answers[1]) {
    throw std::runtime_error(fmt::format("{}: the answers of {} and {} differ", c.name, o.sides[0].label(),
                                         o.sides[1].label()));
  }
  struct Slot {
    size_t side;
    bool work;
  };
  std::vector<Slot> slots = {{0, true}, {0, false}, {1, true}, {1, false}};
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    std::fprintf(stderr, "jit_bench: %s, repetition %u of %u\n", c.name.c_str(), rep + 1, o.reps);
    std::vector<Slot> order = slots;
    std::rotate(order.begin(), order.begin() + rep % order.size(), order.end());
    for (const Slot& s : order) {
      Run run = run_aup(o, c, o.sides[s.side], s.work ? c.work : c.baseline, "/dev/null", errors);
      (s.work ? r.work : r.base)[s.side].push_back(run);
    }
  }
  std::remove(errors.c_str());
  return r;
}

}  // namespace aup::bench::jit
