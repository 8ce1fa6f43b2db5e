// The address ranges of placed buffers, searchable by time: what the greedy placers
// (core/placement.h) and the merge's repair (merge/) ask of a partial layout, "which addresses
// are taken at some step of this lifetime", in O(log n) merged range sets per query.
#pragma once

#include <algorithm>
#include <iterator>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"

namespace roam {

using AddressRange = std::pair<Bytes, Bytes>;  // [lo, hi) in the arena

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
  void AppendTo(std::vector<AddressRange>& out) const {
    out.insert(out.end(), pieces_.begin(), pieces_.end());
  }

 private:
  static constexpr Bytes kMax = std::numeric_limits<Bytes>::max();
  std::vector<AddressRange> pieces_;
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
  const std::vector<AddressRange>& Overlapping(const Interval& in) {
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
  std::vector<AddressRange> out_, scratch_;
  std::vector<size_t> bounds_;  // run boundaries in out_
};

// The lowest offset >= floor, a multiple of `alignment`, where `size` bytes fit between the
// sorted (possibly overlapping) occupied ranges.
inline Bytes LowestFit(const std::vector<AddressRange>& occupied, Bytes size, Bytes floor,
                       Bytes alignment) {
  auto align = [&](Bytes x) { return (x + alignment - 1) / alignment * alignment; };
  Bytes candidate = align(floor);
  for (const auto& [lo, hi] : occupied) {
    if (hi <= candidate) continue;
    if (lo >= candidate + size) break;
    candidate = align(hi);
  }
  return candidate;
}

}  // namespace roam
