#include "core/placement.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "core/bytes.h"
#include "core/error.h"
#include "core/placed_by_time.h"

namespace roam {
namespace {

void CheckAlignment(Bytes alignment) {
  if (alignment <= 0) throw InputError("alignment must be positive");
}

}  // namespace

std::vector<Bytes> GreedyPlacement(std::span<const Interval> intervals,
                                   std::span<const size_t> order, Fit fit,
                                   std::span<const Bytes> alignments,
                                   std::span<const Bytes> fixed) {
  const bool uniform = alignments.size() == 1;
  const auto alignment_of = [&](size_t i) { return uniform ? alignments[0] : alignments[i]; };
  std::vector<Bytes> offsets(intervals.size(), 0);
  PlacedByTime placed(intervals);
  for (size_t i = 0; i < fixed.size(); ++i) {
    if (fixed[i] < 0) continue;
    offsets[i] = fixed[i];
    if (intervals[i].size > 0) placed.Insert(intervals[i], fixed[i]);
  }
  // With one alignment and every size and fixed offset a multiple of it, every address the
  // sweep meets is one too.
  const bool aligned =
      uniform &&
      std::all_of(intervals.begin(), intervals.end(),
                  [&](const Interval& in) { return in.size % alignments[0] == 0; }) &&
      std::all_of(fixed.begin(), fixed.end(), [&](Bytes f) { return f % alignments[0] == 0; });
  for (size_t i : order) {
    const Interval& in = intervals[i];
    if (in.size == 0) continue;  // occupies no address, conflicts with nothing
    const Bytes alignment = alignment_of(i);
    auto align = [&](Bytes address) { return aligned ? address : AlignUp(address, alignment); };
    Bytes cursor = 0;  // lowest free address above the occupied ranges seen so far
    Bytes best_offset = -1, best_gap = 0;
    for (const auto& [lo, hi] : placed.Overlapping(in)) {
      const Bytes gap_start = align(cursor);
      if (lo > gap_start && lo - gap_start >= in.size &&
          (best_offset < 0 || lo - gap_start < best_gap)) {
        best_offset = gap_start;
        best_gap = lo - gap_start;
        if (fit == Fit::kLowest) break;
      }
      cursor = std::max(cursor, hi);
    }
    offsets[i] = best_offset >= 0 ? best_offset : align(cursor);
    placed.Insert(in, offsets[i]);
  }
  return offsets;
}

std::vector<Bytes> GreedyBestFitPlacement(std::span<const Interval> intervals,
                                          std::span<const size_t> order, Bytes alignment) {
  return GreedyPlacement(intervals, order, Fit::kSmallestGap,
                         std::span<const Bytes>(&alignment, 1));
}

namespace {

std::vector<size_t> Indices(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

Bytes Length(const Interval& in) { return static_cast<Bytes>(in.end) - in.start + 1; }

}  // namespace

std::vector<Bytes> LargestFirstLayout(std::span<const Interval> intervals,
                                      std::span<const Bytes> alignments,
                                      std::span<const Bytes> fixed) {
  std::vector<size_t> order;
  for (size_t i = 0; i < intervals.size(); ++i)
    if (intervals[i].size > 0 && (fixed.empty() || fixed[i] < 0)) order.push_back(i);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return std::make_tuple(-x.size, -Length(x), a) < std::make_tuple(-y.size, -Length(y), b);
  });
  return GreedyPlacement(intervals, order, Fit::kLowest, alignments, fixed);
}

std::vector<Bytes> LongLivedFirstLayout(std::span<const Interval> intervals, Bytes alignment) {
  CheckAlignment(alignment);
  std::vector<size_t> order = Indices(intervals.size());
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return std::make_tuple(-Length(x), -x.size, a) < std::make_tuple(-Length(y), -y.size, b);
  });
  return GreedyBestFitPlacement(intervals, order, alignment);
}

std::vector<Bytes> BestFitLayout(std::span<const Interval> intervals, Bytes alignment) {
  CheckAlignment(alignment);
  std::vector<size_t> by_size = Indices(intervals.size());
  std::sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return std::make_tuple(-x.size, -Length(x), a) < std::make_tuple(-y.size, -Length(y), b);
  });
  std::vector<size_t> by_start = Indices(intervals.size());
  std::sort(by_start.begin(), by_start.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return std::make_tuple(x.start, -x.size, a) < std::make_tuple(y.start, -y.size, b);
  });
  std::vector<Bytes> sized = GreedyBestFitPlacement(intervals, by_size, alignment);
  std::vector<Bytes> timed = GreedyBestFitPlacement(intervals, by_start, alignment);
  return LayoutHeight(intervals, timed) < LayoutHeight(intervals, sized) ? timed : sized;
}

}  // namespace roam
