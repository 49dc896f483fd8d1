// Latencies in a log-scaled histogram: exact below 16 ns, then sixteen
// buckets per power of two (each 1/16 of its power wide, so a percentile
// is off by at most 6.25%). Fixed size, no allocation: the store adds every
// commit's sync time on the owner thread at no cost worth measuring.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace aup::storage {

class LatencyHistogram {
 public:
  void add(uint64_t ns) {
    ++buckets_[index(ns)];
    ++count_;
    if (ns > max_) max_ = ns;
  }
  // Adds every value `o` holds (a window of histograms, runtime/metrics.h).
  void merge(const LatencyHistogram& o) {
    for (size_t i = 0; i < buckets_.size(); ++i) buckets_[i] += o.buckets_[i];
    count_ += o.count_;
    if (o.max_ > max_) max_ = o.max_;
  }
  uint64_t count() const { return count_; }
  uint64_t max_ns() const { return max_; }
  // The smallest bucket bound that at least fraction p (0..1] of the
  // values are at or under; 0 when empty.
  uint64_t percentile_ns(double p) const {
    if (count_ == 0) return 0;
    auto want = static_cast<uint64_t>(p * static_cast<double>(count_) + 0.999999);
    if (want == 0) want = 1;
    uint64_t seen = 0;
    for (size_t i = 0; i < buckets_.size(); ++i) {
      seen += buckets_[i];
      if (seen >= want) return upper(i) < max_ ? upper(i) : max_;
    }
    return max_;
  }

  static size_t index(uint64_t ns) {
    if (ns < 16) return static_cast<size_t>(ns);
    unsigned e = 63u - static_cast<unsigned>(std::countl_zero(ns));  // >= 4
    uint64_t sub = (ns >> (e - 4)) & 15;
    return (e - 3) * 16 + sub;
  }
  static uint64_t upper(size_t i) {
    if (i < 16) return i;
    unsigned e = static_cast<unsigned>(i / 16 + 3);
    uint64_t sub = i % 16;
    uint64_t width = uint64_t{1} << (e - 4);
    return ((16 + sub) << (e - 4)) + width - 1;
  }

 private:
  std::array<uint64_t, 61 * 16> buckets_{};  // index() of UINT64_MAX is 60 * 16 + 15
  uint64_t count_ = 0;
  uint64_t max_ = 0;
};

}  // namespace aup::storage
