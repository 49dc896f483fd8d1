#include "measure.h"

#include <fmt/format.h>
#include <time.h>

#include <algorithm>
#include <stdexcept>

namespace aup::bench::json {

namespace {

double now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Every parser must accept every line and agree on its checksum.
void verify(const Corpus& c, const std::vector<Parser*>& parsers) {
  for (size_t i = 0; i < c.lines.size(); ++i) {
    uint64_t first = 0;
    for (size_t p = 0; p < parsers.size(); ++p) {
      uint64_t sum = 0;
      if (!parsers[p]->walk(c.line(i), c.capacity(i), sum)) {
        throw std::runtime_error(fmt::format("{} rejected {} line {}: {}", parsers[p]->id(), c.name, i, c.line(i)));
      }
      if (p == 0) {
        first = sum;
      } else if (sum != first) {
        throw std::runtime_error(fmt::format("{} and {} disagree on {} line {}: {}", parsers[0]->id(),
                                             parsers[p]->id(), c.name, i, c.line(i)));
      }
    }
  }
}

// One timed pass of `p` over the corpus; returns the checksum.
uint64_t pass(const Corpus& c, Parser& p) {
  uint64_t sum = 0;
  for (size_t i = 0; i < c.lines.size(); ++i) {
    if (!p.walk(c.line(i), c.capacity(i), sum)) throw std::runtime_error(p.id() + " failed in a pass");
  }
  return sum;
}

}  // namespace

CorpusResult measure_corpus(const Corpus& c, const std::vector<Parser*>& parsers, const Options& o) {
  verify(c, parsers);
  CorpusResult r;
  r.corpus = c.name;
  r.lines = c.lines.size();
  r.text_bytes = c.text_bytes();
  r.example = std::string(c.line(0));
  for (Parser* p : parsers) r.parsers.push_back(ParserTiming{p->id(), p->label(), {}, {}});
  double n = static_cast<double>(c.lines.size());
  uint64_t expected = 0;
  for (uint32_t rep = 0; rep < o.reps; ++rep) {
    for (size_t k = 0; k < parsers.size(); ++k) {
      size_t p = (k + rep) % parsers.size();
      double c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
      double w0 = now_ns(CLOCK_MONOTONIC);
      uint64_t sum = pass(c, *parsers[p]);
      double w1 = now_ns(CLOCK_MONOTONIC);
      double c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
      if (rep == 0 && k == 0) expected = sum;
      if (sum != expected) throw std::runtime_error(fmt::format("{}: checksum changed between passes", c.name));
      r.parsers[p].ns_per_line.push_back((c1 - c0) / n);
      r.parsers[p].wall_ns_per_line.push_back((w1 - w0) / n);
    }
  }
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

double ratio_median(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> q;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) q.push_back(a[i] / b[i]);
  return median(std::move(q));
}

}  // namespace aup::bench::json
