#include "bench/json/corpus.h"

#include <fmt/format.h>

#include <random>

namespace aup::bench::json {

namespace {

void add_line(Corpus& c, const std::string& line) {
  c.lines.push_back(Corpus::Span{c.buffer.size(), line.size()});
  c.buffer += line;
  c.buffer += '\n';
}

}  // namespace

size_t Corpus::text_bytes() const {
  size_t n = 0;
  for (const Span& s : lines) n += s.size;
  return n;
}

Corpus make_transfers(size_t count, uint64_t seed, size_t padding) {
  Corpus c;
  c.name = "transfer";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> account(1, 10000);
  std::uniform_int_distribution<int> amount(1, 20000);
  for (size_t i = 0; i < count; ++i) {
    add_line(c, fmt::format(R"({{"event":"transfer","args":{{"from":{},"to":{},"amount":{}}},"id":{}}})",
                            account(rng), account(rng), amount(rng), i + 1));
  }
  c.buffer.append(padding, ' ');
  return c;
}

Corpus make_new_orders(size_t count, uint64_t seed, size_t padding) {
  Corpus c;
  c.name = "new_order";
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> district(1, 10);
  std::uniform_int_distribution<int> customer(1, 3000);
  std::uniform_int_distribution<int> item(1, 100000);
  std::uniform_int_distribution<int> quantity(1, 10);
  for (size_t i = 0; i < count; ++i) {
    std::string line = fmt::format(R"({{"event":"new_order","args":{{"w":1,"d":{},"c":{},"lines":[)", district(rng),
                                   customer(rng));
    for (int l = 0; l < 10; ++l) {
      line += fmt::format(R"({}{{"item":{},"supply":1,"quantity":{}}})", l ? "," : "", item(rng), quantity(rng));
    }
    line += fmt::format(R"(]}},"id":{}}})", i + 1);
    add_line(c, line);
  }
  c.buffer.append(padding, ' ');
  return c;
}

}  // namespace aup::bench::json
