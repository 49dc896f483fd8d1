#include "bench/common/measure.h"

#include <algorithm>

namespace aup::bench {

double now_ns(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
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

}  // namespace aup::bench
