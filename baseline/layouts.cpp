#include "baseline/layouts.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <string>
#include <tuple>

#include "core/error.h"

namespace roam {

namespace {
constexpr std::array<std::string_view, 3> kNames = {"pytorch", "llfb", "best-fit"};

size_t U(int i) { return static_cast<size_t>(i); }

// ---------------------------------------------------------------------------------------------
// Greedy placement shared by llfb and best-fit.

// The buffers placed so far, searchable by time: a max-end segment tree over the distinct
// start steps, so that finding the k placed buffers overlapping [s, e] costs O((k + 1) log n)
// instead of a scan over everything placed.
class PlacedByTime {
 public:
  explicit PlacedByTime(std::span<const Interval> intervals) : intervals_(intervals) {
    for (const Interval& in : intervals) starts_.push_back(in.start);
    std::sort(starts_.begin(), starts_.end());
    starts_.erase(std::unique(starts_.begin(), starts_.end()), starts_.end());
    leaves_ = 1;
    while (leaves_ < starts_.size()) leaves_ *= 2;
    max_end_.assign(2 * leaves_, kNoStep);
    by_start_.resize(leaves_);
  }

  void Insert(size_t index) {
    const Interval& in = intervals_[index];
    size_t leaf = Rank(in.start);
    // Kept by decreasing end so a query can stop at the first one ending too early.
    auto& list = by_start_[leaf];
    auto pos = std::find_if(list.begin(), list.end(),
                            [&](size_t j) { return intervals_[j].end < in.end; });
    list.insert(pos, index);
    for (size_t node = leaf + leaves_; node >= 1; node /= 2)
      max_end_[node] = std::max(max_end_[node], in.end);
  }

  // Appends to out the placed buffers sharing a step with [start, end].
  void Overlapping(Step start, Step end, std::vector<size_t>& out) const {
    size_t last = static_cast<size_t>(std::upper_bound(starts_.begin(), starts_.end(), end) -
                                      starts_.begin());
    if (last == 0) return;
    Visit(1, 0, leaves_, last, start, out);
  }

 private:
  size_t Rank(Step start) const {
    return static_cast<size_t>(std::lower_bound(starts_.begin(), starts_.end(), start) -
                               starts_.begin());
  }
  // Node covers leaves [lo, hi); collect from leaves < last whose buffers end at or after start.
  void Visit(size_t node, size_t lo, size_t hi, size_t last, Step start,
             std::vector<size_t>& out) const {
    if (lo >= last || max_end_[node] < start) return;
    if (hi - lo == 1) {
      for (size_t j : by_start_[lo]) {
        if (intervals_[j].end < start) break;
        out.push_back(j);
      }
      return;
    }
    size_t mid = (lo + hi) / 2;
    Visit(2 * node, lo, mid, last, start, out);
    Visit(2 * node + 1, mid, hi, last, start, out);
  }

  std::span<const Interval> intervals_;
  std::vector<Step> starts_;
  size_t leaves_ = 1;
  std::vector<Step> max_end_;
  std::vector<std::vector<size_t>> by_start_;
};

}  // namespace

std::vector<Bytes> GreedyBestFitPlacement(std::span<const Interval> intervals,
                                          std::span<const size_t> order, Bytes alignment) {
  std::vector<Bytes> offsets(intervals.size(), 0);
  PlacedByTime placed(intervals);
  std::vector<size_t> overlap;
  std::vector<std::pair<Bytes, Bytes>> chunks;  // offset, end address
  for (size_t i : order) {
    const Interval& in = intervals[i];
    if (in.size == 0) continue;  // occupies no address, conflicts with nothing
    overlap.clear();
    placed.Overlapping(in.start, in.end, overlap);
    chunks.clear();
    for (size_t j : overlap) chunks.emplace_back(offsets[j], offsets[j] + intervals[j].size);
    std::sort(chunks.begin(), chunks.end());
    Bytes cursor = 0;  // lowest free address above the chunks seen so far
    Bytes best_offset = -1, best_gap = 0;
    for (const auto& [lo, hi] : chunks) {
      const Bytes gap_start = AlignUp(cursor, alignment);
      if (lo > gap_start && lo - gap_start >= in.size &&
          (best_offset < 0 || lo - gap_start < best_gap)) {
        best_offset = gap_start;
        best_gap = lo - gap_start;
      }
      cursor = std::max(cursor, hi);
    }
    offsets[i] = best_offset >= 0 ? best_offset : AlignUp(cursor, alignment);
    placed.Insert(i);
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

std::vector<Bytes> LongLivedFirst(std::span<const Interval> intervals, Bytes alignment) {
  std::vector<size_t> order = Indices(intervals.size());
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return std::make_tuple(-Length(x), -x.size, a) < std::make_tuple(-Length(y), -y.size, b);
  });
  return GreedyBestFitPlacement(intervals, order, alignment);
}

std::vector<Bytes> BestFit(std::span<const Interval> intervals, Bytes alignment) {
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

// ---------------------------------------------------------------------------------------------
// PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, default settings).

class CachingAllocator {
 public:
  explicit CachingAllocator(const PytorchAllocatorParams& params, Bytes alignment)
      : params_(params), granule_(std::lcm(params.min_block_size, alignment)) {}

  // Returns the block's address in the arena (segments laid end to end in creation order).
  int Malloc(Bytes request) {
    const Bytes size = std::max(granule_, AlignUp(request, granule_));
    const bool small = size <= params_.small_size;
    auto& pool = small ? small_pool_ : large_pool_;
    int block;
    auto it = pool.lower_bound({size, 0, 0});
    if (it != pool.end()) {
      block = std::get<2>(*it);
      pool.erase(it);
    } else {
      block = NewSegment(small, size);
    }
    Block& b = blocks_[U(block)];
    const Bytes remaining = b.size - size;
    if (small ? remaining >= granule_ : remaining > params_.small_size) {
      const int rest = static_cast<int>(blocks_.size());
      blocks_.push_back({b.addr + size, remaining, block, b.next, true, small});
      Block& head = blocks_[U(block)];  // push_back may have moved it
      if (head.next >= 0) blocks_[U(head.next)].prev = rest;
      head.next = rest;
      head.size = size;
      pool.insert(Key(rest));
    }
    blocks_[U(block)].free = false;
    return block;
  }

  void Free(int block) {
    Block& b = blocks_[U(block)];
    b.free = true;
    auto& pool = b.small ? small_pool_ : large_pool_;
    // Coalesce with free neighbours in the same segment; the merged block keeps the lowest
    // address and the id of whichever block held it.
    int merged = block;
    if (b.prev >= 0 && blocks_[U(b.prev)].free) {
      pool.erase(Key(b.prev));
      merged = Absorb(b.prev, block);
    }
    const int next = blocks_[U(merged)].next;
    if (next >= 0 && blocks_[U(next)].free) {
      pool.erase(Key(next));
      Absorb(merged, next);
    }
    pool.insert(Key(merged));
  }

  Bytes Address(int block) const { return blocks_[U(block)].addr; }
  Bytes Reserved() const { return reserved_; }

 private:
  struct Block {
    Bytes addr = 0;
    Bytes size = 0;
    int prev = -1, next = -1;  // neighbours in the same segment
    bool free = true;
    bool small = false;
  };
  using PoolKey = std::tuple<Bytes, Bytes, int>;  // size, address, block: best fit, lowest addr

  PoolKey Key(int block) const { return {blocks_[U(block)].size, blocks_[U(block)].addr, block}; }

  int NewSegment(bool small, Bytes size) {
    Bytes bytes = small                            ? params_.small_segment
                  : size < params_.min_large_alloc ? params_.large_segment
                                                   : AlignUp(size, params_.round_large);
    bytes = AlignUp(bytes, granule_);
    blocks_.push_back({reserved_, bytes, -1, -1, true, small});
    reserved_ += bytes;
    return static_cast<int>(blocks_.size()) - 1;
  }

  // Merges block `high` (directly above `low`) into `low`; returns low.
  int Absorb(int low, int high) {
    Block& l = blocks_[U(low)];
    Block& h = blocks_[U(high)];
    l.size += h.size;
    l.next = h.next;
    if (h.next >= 0) blocks_[U(h.next)].prev = low;
    h.size = 0;
    h.prev = h.next = -1;
    return low;
  }

  PytorchAllocatorParams params_;
  Bytes granule_;
  std::vector<Block> blocks_;
  std::set<PoolKey> small_pool_, large_pool_;
  Bytes reserved_ = 0;
};

}  // namespace

PytorchLayout SimulatePytorchAllocator(std::span<const Interval> intervals, Bytes alignment,
                                       const PytorchAllocatorParams& params) {
  // Allocations at step s (index order), then frees at s (index order), step by step.
  std::vector<size_t> by_start = Indices(intervals.size());
  std::vector<size_t> by_end = Indices(intervals.size());
  std::stable_sort(by_start.begin(), by_start.end(),
                   [&](size_t a, size_t b) { return intervals[a].start < intervals[b].start; });
  std::stable_sort(by_end.begin(), by_end.end(),
                   [&](size_t a, size_t b) { return intervals[a].end < intervals[b].end; });
  CachingAllocator allocator(params, alignment);
  PytorchLayout layout;
  layout.offsets.assign(intervals.size(), 0);
  std::vector<int> block(intervals.size(), -1);
  size_t a = 0, f = 0;
  while (a < by_start.size() || f < by_end.size()) {
    Step step = f < by_end.size() ? intervals[by_end[f]].end : intervals[by_start[a]].start;
    if (a < by_start.size()) step = std::min(step, intervals[by_start[a]].start);
    for (; a < by_start.size() && intervals[by_start[a]].start == step; ++a) {
      const size_t i = by_start[a];
      if (intervals[i].size == 0) continue;  // PyTorch hands out no memory for 0 bytes
      block[i] = allocator.Malloc(intervals[i].size);
      layout.offsets[i] = allocator.Address(block[i]);
    }
    for (; f < by_end.size() && intervals[by_end[f]].end == step; ++f)
      if (block[by_end[f]] >= 0) allocator.Free(block[by_end[f]]);
  }
  layout.reserved = allocator.Reserved();
  return layout;
}

std::span<const std::string_view> LayoutNames() { return kNames; }

std::vector<Bytes> PlaceBuffers(std::string_view name, std::span<const Interval> intervals,
                                Bytes alignment) {
  if (alignment <= 0) throw InputError("alignment must be positive");
  if (name == "pytorch") return SimulatePytorchAllocator(intervals, alignment).offsets;
  if (name == "llfb") return LongLivedFirst(intervals, alignment);
  if (name == "best-fit") return BestFit(intervals, alignment);
  throw InputError("unknown layout \"" + std::string(name) + "\"");
}

}  // namespace roam
