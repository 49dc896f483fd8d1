#include "bench/json/measure.h"

#include <fmt/format.h>

#include <stdexcept>

namespace aup::bench::json {

namespace {

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
      uint64_t sum = 0;
      Elapsed e = elapsed([&] { return pass(c, *parsers[p]); }, sum);
      if (rep == 0 && k == 0) expected = sum;
      if (sum != expected) throw std::runtime_error(fmt::format("{}: checksum changed between passes", c.name));
      r.parsers[p].ns_per_line.push_back(e.cpu_ns / n);
      r.parsers[p].wall_ns_per_line.push_back(e.wall_ns / n);
    }
  }
  return r;
}

}  // namespace aup::bench::json
