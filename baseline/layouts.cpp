#include "baseline/layouts.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>
#include <string>
#include <tuple>

#include "core/bytes.h"
#include "core/error.h"
#include "core/placement.h"
#include "core/types.h"

namespace roam {

namespace {
constexpr std::array<std::string_view, 3> kNames = {"pytorch", "llfb", "best-fit"};

std::vector<size_t> Indices(size_t n) {
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  return order;
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
    // Segments are never released, so their rounding can carry the arena past kMaxBytes even
    // when the buffers fit (found by fuzz/layout_csv_fuzz); refuse rather than wrap.
    if (bytes > kMaxBytes - reserved_)
      throw InputError("layout pytorch: a new segment of " + std::to_string(bytes) +
                       " bytes at offset " + std::to_string(reserved_) +
                       " would end beyond roam's maximum of " + DescribeMaxBytes());
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
  if (name == "llfb") return LongLivedFirstLayout(intervals, alignment);
  if (name == "best-fit") return BestFitLayout(intervals, alignment);
  throw InputError("unknown layout \"" + std::string(name) + "\"");
}

}  // namespace roam
