// Bit-for-bit check of number reading: random doubles of several kinds,
// each printed two ways (printf %.17g, and the shortest text that reads
// back, std::to_chars, which is also how aup prints numbers), each text
// read back by every parser as {"v":TEXT}. A correct reader returns the
// original bits for every text: both printings round-trip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/json/parsers.h"

namespace aup::bench::json {

struct NumberMismatch {
  std::string text;
  uint64_t expected_bits = 0;
  uint64_t got_bits = 0;
  bool parse_failed = false;
};

struct NumberResult {
  std::string format;  // "%.17g" or "shortest"
  std::string parser;  // Parser::id()
  size_t checked = 0;
  size_t mismatched = 0;  // wrong bits or failed to parse
  std::vector<NumberMismatch> examples;  // the first few
};

// `per_kind` random values of each kind, plus fixed edge cases.
std::vector<double> make_doubles(size_t per_kind, uint64_t seed);
std::vector<NumberResult> check_numbers(const std::vector<double>& values, const std::vector<Parser*>& parsers,
                                        size_t padding);

}  // namespace aup::bench::json
