// Layout instances for the tests and benchmarks of the layout stage: random tiny ones with a
// brute-force optimum, and perfect packings whose optimum is known by construction.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"

namespace roam::testing {

// The minimal height by exhaustive enumeration of offsets (multiples of each buffer's
// alignment), honouring fixed offsets (-1: free). For a handful of small buffers only.
Bytes BruteForceMinHeight(std::span<const Interval> intervals, std::span<const Bytes> align,
                          std::span<const Bytes> fixed);

// n buffers with sizes in [1, max_size] times unit and lifetimes inside [0, horizon).
std::vector<Interval> RandomIntervals(std::mt19937_64& rng, int n, Bytes max_size, int horizon,
                                      Bytes unit = 1);

// Cuts the rectangle capacity x [0, horizon) into n rectangles by random guillotine cuts (sizes
// in multiples of unit, at least unit) and returns them as buffers: every step's live bytes
// sum to the capacity, so the optimal height is the capacity. offsets (if given) receives the
// packing the cuts define.
std::vector<Interval> PerfectPacking(std::mt19937_64& rng, int n, Bytes capacity, int horizon,
                                     Bytes unit, std::vector<Bytes>* offsets = nullptr);

}  // namespace roam::testing
