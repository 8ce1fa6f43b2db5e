#include "core/placement.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <tuple>

#include "core/bytes.h"
#include "core/error.h"

namespace roam {
namespace {

void CheckAlignment(Bytes alignment) {
  if (alignment <= 0) throw InputError("alignment must be positive");
}

using Range = std::pair<Bytes, Bytes>;  // [lo, hi) in the arena

// A set of address ranges kept as sorted, disjoint, non-touching [lo, hi) pieces in a flat
// vector: the sets stay small (their pieces merge), so shifting beats a tree's allocations.
class RangeUnion {
 public:
  void Add(Bytes lo, Bytes hi) {
    // First piece that could touch [lo, hi): the last one starting at or before lo, if it
    // reaches lo, else the first starting after lo.
    auto first = std::upper_bound(pieces_.begin(), pieces_.end(), std::make_pair(lo, kMax));
    if (first != pieces_.begin() && std::prev(first)->second >= lo) --first;
    auto last = first;
    while (last != pieces_.end() && last->first <= hi) {
      lo = std::min(lo, last->first);
      hi = std::max(hi, last->second);
      ++last;
    }
    if (first == last) {
      pieces_.insert(first, {lo, hi});
    } else {
      *first = {lo, hi};
      pieces_.erase(first + 1, last);
    }
  }
  void AppendTo(std::vector<Range>& out) const {
    out.insert(out.end(), pieces_.begin(), pieces_.end());
  }

 private:
  static constexpr Bytes kMax = std::numeric_limits<Bytes>::max();
  std::vector<Range> pieces_;
};

// The address ranges of the buffers placed so far, searchable by time. A segment tree over the
// (compressed) steps stores each buffer at the O(log n) nodes covering its lifetime: `own` at
// those nodes, `sub` at them and all their ancestors. The buffers sharing a step with a query
// are then exactly `sub` of the query's covering nodes plus `own` of their ancestors, so a
// query reads O(log n) merged range sets instead of every overlapping buffer: stacked
// long-lived buffers collapse into one piece.
class PlacedByTime {
 public:
  explicit PlacedByTime(std::span<const Interval> intervals) {
    for (const Interval& in : intervals) {
      steps_.push_back(in.start);
      steps_.push_back(in.end);
    }
    std::sort(steps_.begin(), steps_.end());
    steps_.erase(std::unique(steps_.begin(), steps_.end()), steps_.end());
    while (leaves_ < steps_.size()) leaves_ *= 2;
    own_.resize(2 * leaves_);
    sub_.resize(2 * leaves_);
    stamp_.assign(2 * leaves_, 0);
  }

  void Insert(const Interval& in, Bytes offset) {
    const Bytes hi = offset + in.size;
    Cover(in);
    ++epoch_;
    for (size_t node : cover_) {
      own_[node].Add(offset, hi);
      for (size_t x = node; x >= 1 && stamp_[x] != epoch_; x /= 2) {
        stamp_[x] = epoch_;
        sub_[x].Add(offset, hi);
      }
    }
  }

  // The address ranges of the placed buffers sharing a step with `in`, sorted by start
  // (they may overlap). The pieces come as O(log n) sorted runs, merged pairwise.
  const std::vector<Range>& Overlapping(const Interval& in) {
    Cover(in);
    ++epoch_;
    out_.clear();
    bounds_.assign(1, 0);
    auto append = [&](const RangeUnion& set) {
      set.AppendTo(out_);
      if (out_.size() > bounds_.back()) bounds_.push_back(out_.size());
    };
    for (size_t node : cover_) stamp_[node] = epoch_;
    for (size_t node : cover_) {
      append(sub_[node]);
      for (size_t x = node / 2; x >= 1 && stamp_[x] != epoch_; x /= 2) {
        stamp_[x] = epoch_;
        append(own_[x]);
      }
    }
    while (bounds_.size() > 2) {
      scratch_.resize(out_.size());
      size_t kept = 1;
      for (size_t r = 0; r + 1 < bounds_.size(); r += 2) {
        const auto at = [&](size_t b) { return static_cast<std::ptrdiff_t>(bounds_[b]); };
        const size_t end = r + 2 < bounds_.size() ? r + 2 : r + 1;
        if (end == r + 2) {
          std::merge(out_.begin() + at(r), out_.begin() + at(r + 1), out_.begin() + at(r + 1),
                     out_.begin() + at(r + 2), scratch_.begin() + at(r));
        } else {
          std::copy(out_.begin() + at(r), out_.begin() + at(r + 1), scratch_.begin() + at(r));
        }
        bounds_[kept++] = bounds_[end];
      }
      bounds_.resize(kept);
      out_.swap(scratch_);
    }
    return out_;
  }

 private:
  size_t Rank(Step step) const {
    return static_cast<size_t>(std::lower_bound(steps_.begin(), steps_.end(), step) -
                               steps_.begin());
  }
  // The canonical nodes whose ranges partition [in.start, in.end], into cover_.
  void Cover(const Interval& in) {
    cover_.clear();
    for (size_t l = Rank(in.start) + leaves_, r = Rank(in.end) + leaves_ + 1; l < r;
         l /= 2, r /= 2) {
      if (l & 1) cover_.push_back(l++);
      if (r & 1) cover_.push_back(--r);
    }
  }

  std::vector<Step> steps_;
  size_t leaves_ = 1;
  std::vector<RangeUnion> own_, sub_;
  std::vector<unsigned> stamp_;
  unsigned epoch_ = 0;
  std::vector<size_t> cover_;
  std::vector<Range> out_, scratch_;
  std::vector<size_t> bounds_;  // run boundaries in out_
};

}  // namespace

std::vector<Bytes> GreedyBestFitPlacement(std::span<const Interval> intervals,
                                          std::span<const size_t> order, Bytes alignment) {
  std::vector<Bytes> offsets(intervals.size(), 0);
  PlacedByTime placed(intervals);
  // With every size a multiple of the alignment, every address the sweep meets is one too.
  const bool aligned = std::all_of(intervals.begin(), intervals.end(),
                                   [&](const Interval& in) { return in.size % alignment == 0; });
  auto align = [&](Bytes address) { return aligned ? address : AlignUp(address, alignment); };
  for (size_t i : order) {
    const Interval& in = intervals[i];
    if (in.size == 0) continue;  // occupies no address, conflicts with nothing
    Bytes cursor = 0;            // lowest free address above the occupied ranges seen so far
    Bytes best_offset = -1, best_gap = 0;
    for (const auto& [lo, hi] : placed.Overlapping(in)) {
      const Bytes gap_start = align(cursor);
      if (lo > gap_start && lo - gap_start >= in.size &&
          (best_offset < 0 || lo - gap_start < best_gap)) {
        best_offset = gap_start;
        best_gap = lo - gap_start;
      }
      cursor = std::max(cursor, hi);
    }
    offsets[i] = best_offset >= 0 ? best_offset : align(cursor);
    placed.Insert(in, offsets[i]);
  }
  return offsets;
}

namespace {

std::vector<size_t> Indices(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
}

Bytes Length(const Interval& in) { return static_cast<Bytes>(in.end) - in.start + 1; }

}  // namespace

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
