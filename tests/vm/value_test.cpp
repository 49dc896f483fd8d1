// vm/value.h: num_mod, the `%` both engines compute, gives fmod's bits for
// every pair, including the integer fast path's edges.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "vm/value.h"

namespace aup::vm {

namespace {

bool same_bits(double a, double b) {
  if (std::isnan(a) && std::isnan(b)) return true;  // a NaN's payload is not promised
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

}  // namespace

TEST_SUITE("value") {
  TEST_CASE("num_mod agrees with fmod on the edges") {
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> xs = {0.0, -0.0, 1, -1, 2, -2, 3, -3, 7, -7, 0.5, -0.5, 2.5, -7.25,
                              0x1p53, -0x1p53, 0x1p53 - 1, -(0x1p53 - 1), 0x1p60, 1e300, -1e300,
                              4.9e-324, inf, -inf, std::nan("")};
    for (double a : xs) {
      for (double b : xs) {
        CHECK_MESSAGE(same_bits(num_mod(a, b), std::fmod(a, b)), a, " % ", b);
      }
    }
    CHECK(std::signbit(num_mod(-4, 2)));   // -0, as fmod gives
    CHECK(!std::signbit(num_mod(4, -2)));  // +0
  }

  TEST_CASE("num_mod agrees with fmod on random whole and fractional numbers") {
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int64_t> whole(-(int64_t{1} << 53), int64_t{1} << 53);
    std::uniform_int_distribution<int64_t> small(-1000, 1000);
    std::uniform_real_distribution<double> real(-1e6, 1e6);
    for (int i = 0; i < 200000; ++i) {
      double a = static_cast<double>(i % 3 == 0 ? whole(rng) : small(rng));
      double b = static_cast<double>(i % 5 == 0 ? whole(rng) : small(rng));
      if (i % 7 == 0) a = real(rng);
      if (i % 11 == 0) b = real(rng);
      REQUIRE_MESSAGE(same_bits(num_mod(a, b), std::fmod(a, b)), a, " % ", b);
    }
  }
}

}  // namespace aup::vm
