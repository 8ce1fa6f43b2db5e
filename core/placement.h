// Greedy placement of buffers with fixed lifetimes: the heuristics every layout engine starts
// from. They live in core, not baseline/, because the exact engines (layout/, ilp/) warm-start
// from them; baseline/ offers them under their baseline names ("llfb", "best-fit").
//
// In: intervals (aligned sizes, inclusive step ranges) and the alignment. Out: one offset per
// interval, a multiple of the alignment, such that intervals sharing a step do not overlap.
#pragma once

#include <span>
#include <vector>

#include "core/memory_model.h"

namespace roam {

// The greedy placement behind llfb and best-fit, in a given order of interval indices: each
// interval goes to the smallest gap between the already placed intervals it shares a step with
// that holds it (ties: lowest offset), at the gap's bottom; with no such gap, right above
// the highest of them. Offsets are rounded up to the alignment. Intervals not in order get 0.
std::vector<Bytes> GreedyBestFitPlacement(std::span<const Interval> intervals,
                                          std::span<const size_t> order, Bytes alignment);

// Long-lived first (llfb): GreedyBestFitPlacement by decreasing lifetime, then size.
// Throws InputError for a non-positive alignment.
std::vector<Bytes> LongLivedFirstLayout(std::span<const Interval> intervals, Bytes alignment);

// Best-fit: the lower of GreedyBestFitPlacement by decreasing size (then lifetime) and by
// start step. Throws InputError for a non-positive alignment.
std::vector<Bytes> BestFitLayout(std::span<const Interval> intervals, Bytes alignment);

}  // namespace roam
