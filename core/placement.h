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

// Where the greedy placer puts an interval among the already placed ones it shares a step with.
enum class Fit {
  kSmallestGap,  // the smallest gap that holds it (ties: lowest), at its bottom; else on top
  kLowest,       // the lowest offset that holds it (first fit)
};

// The one greedy placer: first every interval with a fixed offset (fixed[i] >= 0) at it, then
// the intervals of `order` one at a time by `fit`, each offset rounded up to its alignment
// (alignments: one for all, or one per interval). Intervals in neither get their fixed offset
// or 0; so do zero-size ones, which conflict with nothing. Fixed offsets must not overlap.
std::vector<Bytes> GreedyPlacement(std::span<const Interval> intervals,
                                   std::span<const size_t> order, Fit fit,
                                   std::span<const Bytes> alignments,
                                   std::span<const Bytes> fixed = {});

// The placement behind llfb and best-fit: GreedyPlacement by kSmallestGap with no fixed
// offsets. Intervals not in order get 0.
std::vector<Bytes> GreedyBestFitPlacement(std::span<const Interval> intervals,
                                          std::span<const size_t> order, Bytes alignment);

// Largest first, the exact engines' greedy start: the fixed intervals where they are, then the
// others by decreasing size, longer lifetime first on ties, each at the lowest offset free over
// its lifetime (kLowest). fixed: empty, or one per interval (-1 for a free one).
std::vector<Bytes> LargestFirstLayout(std::span<const Interval> intervals,
                                      std::span<const Bytes> alignments,
                                      std::span<const Bytes> fixed = {});

// Long-lived first (llfb): GreedyBestFitPlacement by decreasing lifetime, then size.
// Throws InputError for a non-positive alignment.
std::vector<Bytes> LongLivedFirstLayout(std::span<const Interval> intervals, Bytes alignment);

// Best-fit: the lower of GreedyBestFitPlacement by decreasing size (then lifetime) and by
// start step. Throws InputError for a non-positive alignment.
std::vector<Bytes> BestFitLayout(std::span<const Interval> intervals, Bytes alignment);

}  // namespace roam
