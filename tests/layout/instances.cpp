#include "tests/layout/instances.h"

#include <algorithm>
#include <functional>

namespace roam::testing {

Bytes BruteForceMinHeight(std::span<const Interval> intervals, std::span<const Bytes> align,
                          std::span<const Bytes> fixed) {
  const size_t n = intervals.size();
  Bytes total = 0;
  for (size_t i = 0; i < n; ++i)
    total += intervals[i].size + align[i] + std::max<Bytes>(fixed[i], 0);
  Bytes best = total + 1;
  std::vector<Bytes> offsets(n, 0);
  std::function<void(size_t, Bytes)> place = [&](size_t i, Bytes height) {
    if (height >= best) return;
    if (i == n) {
      best = height;
      return;
    }
    const Interval& in = intervals[i];
    auto fits = [&](Bytes o) {
      for (size_t j = 0; j < i; ++j) {
        const Interval& other = intervals[j];
        if (in.size == 0 || other.size == 0) continue;
        if (in.start <= other.end && other.start <= in.end && o < offsets[j] + other.size &&
            offsets[j] < o + in.size)
          return false;
      }
      return true;
    };
    if (fixed[i] >= 0) {
      if (!fits(fixed[i])) return;
      offsets[i] = fixed[i];
      place(i + 1, in.size == 0 ? height : std::max(height, fixed[i] + in.size));
      return;
    }
    if (in.size == 0) {
      offsets[i] = 0;
      place(i + 1, height);
      return;
    }
    for (Bytes o = 0; o + in.size < best; o += align[i]) {
      if (!fits(o)) continue;
      offsets[i] = o;
      place(i + 1, std::max(height, o + in.size));
    }
  };
  place(0, 0);
  return best;
}

std::vector<Interval> RandomIntervals(std::mt19937_64& rng, int n, Bytes max_size, int horizon,
                                      Bytes unit) {
  std::uniform_int_distribution<Bytes> size(1, max_size);
  std::uniform_int_distribution<int> time(0, horizon - 1);
  std::vector<Interval> out;
  for (int i = 0; i < n; ++i) {
    int a = time(rng), b = time(rng);
    out.push_back({size(rng) * unit, std::min(a, b), std::max(a, b)});
  }
  return out;
}

std::vector<Interval> PerfectPacking(std::mt19937_64& rng, int n, Bytes capacity, int horizon,
                                     Bytes unit, std::vector<Bytes>* offsets) {
  struct Rect {
    Bytes y, h;
    int t0, t1;  // [t0, t1)
  };
  std::vector<Rect> rects = {{0, capacity, 0, horizon}};
  for (int tries = 0; static_cast<int>(rects.size()) < n && tries < 100 * n; ++tries) {
    // Larger rectangles are cut more often, as in allocation traces: sizes and lifetimes
    // spread over orders of magnitude without a swarm of slivers.
    std::vector<double> weight;
    for (const Rect& r : rects)
      weight.push_back(static_cast<double>(r.h) * static_cast<double>(r.t1 - r.t0));
    std::discrete_distribution<size_t> pick(weight.begin(), weight.end());
    Rect& r = rects[pick(rng)];
    const bool can_cut_size = r.h >= 2 * unit;
    const bool can_cut_time = r.t1 - r.t0 >= 2;
    if (!can_cut_size && !can_cut_time) continue;
    const bool cut_size = can_cut_size && (!can_cut_time || std::bernoulli_distribution(0.5)(rng));
    if (cut_size) {
      std::uniform_int_distribution<Bytes> at(1, r.h / unit - 1);
      const Bytes cut = at(rng) * unit;
      Rect upper{r.y + cut, r.h - cut, r.t0, r.t1};
      r.h = cut;
      rects.push_back(upper);
    } else {
      std::uniform_int_distribution<int> at(r.t0 + 1, r.t1 - 1);
      const int cut = at(rng);
      Rect later{r.y, r.h, cut, r.t1};
      r.t1 = cut;
      rects.push_back(later);
    }
  }
  std::shuffle(rects.begin(), rects.end(), rng);
  std::vector<Interval> out;
  if (offsets) offsets->clear();
  for (const Rect& r : rects) {
    out.push_back({r.h, r.t0, r.t1 - 1});
    if (offsets) offsets->push_back(r.y);
  }
  return out;
}

}  // namespace roam::testing
