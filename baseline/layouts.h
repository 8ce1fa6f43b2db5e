// Baseline layouts: offsets for buffers with fixed lifetimes (docs/baselines.md).
//
// In: intervals (aligned sizes, inclusive step ranges) and the alignment. Out: one offset per
// interval, a multiple of the alignment, such that intervals sharing a step do not overlap.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/memory_model.h"

namespace roam {

// "pytorch" (caching-allocator simulation), "llfb", "best-fit".
std::span<const std::string_view> LayoutNames();

// Throws InputError for an unknown name.
std::vector<Bytes> PlaceBuffers(std::string_view name, std::span<const Interval> intervals,
                                Bytes alignment);

}  // namespace roam
