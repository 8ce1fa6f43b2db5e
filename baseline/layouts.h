// Baseline layouts: offsets for buffers with fixed lifetimes (docs/baselines.md).
//
// In: intervals (aligned sizes, inclusive step ranges) and the alignment. Out: one offset per
// interval, a multiple of the alignment, such that intervals sharing a step do not overlap.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/memory_model.h"
#include "core/placement.h"  // GreedyBestFitPlacement, the rule behind llfb and best-fit

namespace roam {

// "pytorch" (caching-allocator simulation), "llfb", "best-fit" (the last two are the greedy
// placements of core/placement.h).
std::span<const std::string_view> LayoutNames();

// Throws InputError for an unknown name, a non-positive alignment, or a pytorch layout that
// would end beyond kMaxBytes. Deterministic.
std::vector<Bytes> PlaceBuffers(std::string_view name, std::span<const Interval> intervals,
                                Bytes alignment);

// The constants of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp) with
// its default configuration. Requests are rounded up to lcm(min_block_size, alignment).
struct PytorchAllocatorParams {
  Bytes min_block_size = 512;        // kMinBlockSize: rounding and small-pool split
  Bytes small_size = 1 << 20;        // kSmallSize: largest small-pool request; a large
                                     // block is split only if more than this is left
  Bytes small_segment = 2 << 20;     // kSmallBuffer: small-pool segment
  Bytes large_segment = 20 << 20;    // kLargeBuffer: segment for requests < min_large_alloc
  Bytes min_large_alloc = 10 << 20;  // kMinLargeAlloc
  Bytes round_large = 2 << 20;       // kRoundLarge: rounding of larger segments
};

struct PytorchLayout {
  std::vector<Bytes> offsets;  // one per interval: its block's address in the arena
  Bytes reserved = 0;          // bytes of all segments, the allocator's peak reserved memory
};

// Throws InputError when the segments would end beyond kMaxBytes (core/bytes.h).
// Runs the allocator over the intervals: at each step, first the allocations of the intervals
// starting there, then the frees of those ending there, each in index order. Segments are
// never released and are laid end to end in creation order.
PytorchLayout SimulatePytorchAllocator(std::span<const Interval> intervals, Bytes alignment,
                                       const PytorchAllocatorParams& params = {});

}  // namespace roam
