// The sync-latency histogram: exact small values, bounded relative error,
// percentiles over known distributions, and the extremes.
#include <doctest/doctest.h>

#include <cstdint>

#include "storage/latency.h"

namespace aup::storage {
namespace {

TEST_SUITE("latency") {
  TEST_CASE("every value lands in a bucket whose bounds hold it, within 1/16") {
    for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{15}, uint64_t{16}, uint64_t{17}, uint64_t{31},
                       uint64_t{32}, uint64_t{1000}, uint64_t{123456789}, uint64_t{1} << 40, UINT64_MAX}) {
      CAPTURE(v);
      size_t i = LatencyHistogram::index(v);
      CHECK(i < 61 * 16);
      CHECK(LatencyHistogram::upper(i) >= v);
      if (i > 0) CHECK(LatencyHistogram::upper(i - 1) < v);
      CHECK(static_cast<double>(LatencyHistogram::upper(i) - v) <= static_cast<double>(v) / 16.0 + 1);
    }
  }

  TEST_CASE("percentiles of a known distribution") {
    LatencyHistogram h;
    CHECK(h.percentile_ns(0.5) == 0);
    for (uint64_t v = 1; v <= 1000; ++v) h.add(v * 1000);  // 1 us .. 1 ms
    CHECK(h.count() == 1000);
    CHECK(h.max_ns() == 1000000);
    uint64_t p50 = h.percentile_ns(0.50), p99 = h.percentile_ns(0.99);
    CHECK(p50 >= 500000);
    CHECK(p50 <= 500000 + 500000 / 16);
    CHECK(p99 >= 990000);
    CHECK(p99 <= 1000000);
    CHECK(h.percentile_ns(1.0) == 1000000);
  }

  TEST_CASE("one slow sync shows in p99 only when it is more than 1% of them") {
    LatencyHistogram h;
    for (int i = 0; i < 99; ++i) h.add(2000);
    h.add(50000000);
    CHECK(h.percentile_ns(0.99) < 2200);
    CHECK(h.max_ns() == 50000000);
    h.add(50000000);
    CHECK(h.percentile_ns(0.99) == 50000000);
  }

  TEST_CASE("merging histograms is adding every value to one") {
    LatencyHistogram a, b, both;
    for (uint64_t ns = 1; ns <= 500; ++ns) {
      a.add(ns * 7);
      both.add(ns * 7);
    }
    for (uint64_t ns = 1; ns <= 100; ++ns) {
      b.add(ns * 1000);
      both.add(ns * 1000);
    }
    a.merge(b);
    CHECK(a.count() == both.count());
    CHECK(a.max_ns() == both.max_ns());
    for (double p : {0.01, 0.5, 0.9, 0.99, 1.0}) CHECK(a.percentile_ns(p) == both.percentile_ns(p));
    a.merge(LatencyHistogram{});
    CHECK(a.count() == 600);
  }
}

}  // namespace
}  // namespace aup::storage
