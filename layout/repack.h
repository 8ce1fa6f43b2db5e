// Repacking a layout window by window (docs/layout.md, "Repacking"): a large-neighbourhood
// search that lowers a given layout towards a capacity.
//
// The search engine (layout.h) packs a whole lifetime profile at once. On flat profiles of a
// thousand small buffers (remat's rewritten random layered graphs) its dives stop a few percent
// above max-live, and more nodes do not help: the decisions that went wrong are near the root.
// Repacking keeps the layout and solves small pieces of it again exactly: it aims one alignment
// below the current height, takes a buffer above that target, frees every buffer alive in a
// window of time around it (and every neighbour that is above the target too), keeps all other
// buffers where they are as fixed obstacles, and asks the search for the freed ones within the
// target. Where the search succeeds, the layout is lower there and the rest is unchanged.
//
// In: intervals, the alignment, a valid layout of them, the capacity to reach, the work bounds
// and an optional deadline. Out: a valid layout never higher than the one given, its height and
// what was spent. Deterministic: windows are drawn from a seeded generator and every
// subproblem is bounded by nodes, so the same input gives the same layout unless the deadline
// strikes.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/deadline.h"
#include "core/memory_model.h"
#include "layout/layout.h"

namespace roam::layout {

struct RepackParams {
  // Subproblems solved in all (0: none): the work bound.
  int max_subproblems = 300;
  // Give up after this many subproblems in a row that lowered nothing.
  int max_failures_in_a_row = 60;
  // A window frees at most this many buffers; a larger one counts as a failure.
  int max_free_buffers = 300;
  // A window is the chosen buffer's lifetime widened on each side by a number of steps drawn
  // from 0 to this.
  int max_margin_steps = 80;
  // Search nodes per subproblem (layout.h's max_nodes).
  std::int64_t subproblem_max_nodes = 20000;
  // The search each subproblem runs (layout.h), by default the whole layout search's
  // round-robin. One preorder and the candidate branching alone (multiple_preorders off,
  // random_preorders 0) spend a window's nodes on the two entries that find most fits, which
  // pays where windows are many and each fits or fails on its own (perf/RESULTS.md, "Windows
  // searched with one preorder").
  SearchParams search;
  std::int64_t seed = 1;
};

struct RepackResult {
  std::vector<Bytes> offsets;
  Bytes height = 0;
  int subproblems = 0;  // solved
  int improved = 0;     // of which lowered the layout where they freed it
  // Of which freed the same buffers as a window that failed on the same layout: the same
  // subproblem, known to fail, so not searched again.
  int repeated = 0;
};

// Throws std::invalid_argument when offsets is not a valid layout of intervals (one per
// interval, aligned, non-overlapping where lifetimes meet).
RepackResult Repack(std::span<const Interval> intervals, Bytes alignment,
                    std::span<const Bytes> offsets, Bytes capacity, const RepackParams& params,
                    const Deadline& deadline = Deadline());

// One buffer's repair: where a valid layout is within capacity but for `buffer` (placed above
// it, as the lowest free offset may leave a buffer that now lives longer), frees the window
// around it at each margin in turn (steps on each side of its lifetime, and every buffer in the
// window's span above capacity) and asks the search for the freed ones within capacity at once,
// not one alignment at a time as Repack does. Out: the first window's layout that fits (height
// within capacity), or the layout given (height above capacity); subproblems counts the windows
// searched. The same preconditions as Repack; margins must not be negative.
RepackResult RepackAround(std::span<const Interval> intervals, Bytes alignment,
                          std::span<const Bytes> offsets, Bytes capacity, int buffer,
                          std::span<const int> margins, const RepackParams& params,
                          const Deadline& deadline = Deadline());

}  // namespace roam::layout
