#include "bench/json/numbers.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>

#include "bench/json/corpus.h"

namespace aup::bench::json {

namespace {

constexpr size_t kExamples = 5;

std::string print_17g(double d) {
  char buf[40];
  int n = std::snprintf(buf, sizeof buf, "%.17g", d);
  return std::string(buf, static_cast<size_t>(n));
}

std::string print_shortest(double d) {
  char buf[40];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d);
  (void)ec;
  return std::string(buf, end);
}

}  // namespace

std::vector<double> make_doubles(size_t per_kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> v = {0.0,
                           -0.0,
                           5e-324,
                           -5e-324,
                           2.2250738585072009e-308,  // largest subnormal
                           2.2250738585072014e-308,  // smallest normal
                           std::numeric_limits<double>::max(),
                           -std::numeric_limits<double>::max(),
                           9007199254740992.0,  // 2^53
                           9007199254740994.0,
                           0.1,
                           0.2,
                           0.3,
                           1e22,
                           1e23,
                           123456789012345678.0,
                           0.1 + 0.2,
                           1.0 / 3.0};
  std::uniform_int_distribution<uint64_t> bits;
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::uniform_int_distribution<int64_t> integer(-(int64_t{1} << 53), int64_t{1} << 53);
  std::uniform_int_distribution<int64_t> cents(-10'000'000'000, 10'000'000'000);
  std::uniform_int_distribution<uint64_t> mantissa(1, (uint64_t{1} << 52) - 1);
  for (size_t i = 0; i < per_kind; ++i) {
    double any;
    do {
      any = std::bit_cast<double>(bits(rng));
    } while (!std::isfinite(any));
    v.push_back(any);                                                          // any exponent
    v.push_back(unit(rng));                                                    // [0, 1)
    v.push_back(static_cast<double>(integer(rng)));                            // exact integers
    v.push_back(static_cast<double>(cents(rng)) / 100.0);                      // money in dollars
    v.push_back(std::bit_cast<double>(mantissa(rng) | (bits(rng) & (uint64_t{1} << 63))));  // subnormal
  }
  return v;
}

std::vector<NumberResult> check_numbers(const std::vector<double>& values, const std::vector<Parser*>& parsers,
                                        size_t padding) {
  std::vector<NumberResult> out;
  for (int format = 0; format < 2; ++format) {
    // One line per value, padded like the request corpus.
    Corpus c;
    for (double d : values) {
      std::string line = "{\"v\":" + (format == 0 ? print_17g(d) : print_shortest(d)) + "}";
      c.lines.push_back(Corpus::Span{c.buffer.size(), line.size()});
      c.buffer += line;
      c.buffer += '\n';
    }
    c.buffer.append(padding, ' ');
    for (Parser* p : parsers) {
      NumberResult r;
      r.format = format == 0 ? "%.17g" : "shortest";
      r.parser = p->id();
      for (size_t i = 0; i < values.size(); ++i) {
        double got = 0;
        bool ok = p->read_v(c.line(i), c.capacity(i), got);
        uint64_t want = std::bit_cast<uint64_t>(values[i]);
        ++r.checked;
        if (ok && std::bit_cast<uint64_t>(got) == want) continue;
        ++r.mismatched;
        if (r.examples.size() < kExamples) {
          std::string_view line = c.line(i);
          r.examples.push_back(NumberMismatch{std::string(line.substr(5, line.size() - 6)), want,
                                              std::bit_cast<uint64_t>(got), !ok});
        }
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

}  // namespace aup::bench::json
