// What the perf reports quote of repeated timings: the machines are shared and noisy, so a
// figure is the median of its runs (perf/RESULTS.md).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace roam::perf {

// The middle value (the upper one of an even count); 0 for none.
inline double Median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

}  // namespace roam::perf
