// The nearest-rank percentile of latencies, as bench/server reports them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace aup::bench::peers {

// The value at fraction `p` of `v` (nearest rank); 0 for none. `v` is
// reordered.
template <class T>
double percentile(std::vector<T>& v, double p) {
  if (v.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  size_t at = std::min(v.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(at), v.end());
  return static_cast<double>(v[at]);
}

}  // namespace aup::bench::peers
