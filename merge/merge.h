// Merge: ROAM section IV-B/C. Joins the leaves' results into one plan: orders concatenated
// (ROAM eq 3), layouts stacked with activations at the bottom (eq 9), address conflicts between
// storages of different leaves resolved by re-placing the conflicting temporaries, then a pass
// that slides buffers down where a gap allows. No solver: pure bookkeeping and greedy placement.
//
// In: the leaves' orders; the intervals of every planned storage under the concatenated order
// (model.planned order) and, per leaf, the buffers it lays out with offsets relative to the
// leaf's own base, the first `pinned` of them its activations (contiguous from 0, ROAM eq 9).
// Out: one offset per interval, a valid layout (CheckLayout), and what the merge had to do.
#pragma once

#include <span>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"

namespace roam {

// ROAM eq 3. Throws std::logic_error when the parts do not add up to a permutation of
// 0..num_ops-1 (an op missing or repeated).
std::vector<OpId> ConcatenateOrders(std::span<const std::vector<OpId>> leaf_orders, int num_ops);

struct LeafLayout {
  std::vector<int> buffers;     // interval indices this leaf lays out
  std::vector<Bytes> offsets;   // relative to the leaf's base, one per buffer
  std::vector<char> activation; // per buffer: pinned at the bottom (ROAM eq 9)
};

struct MergeParams {
  bool slide_down = true;  // after stacking and reassignment, move buffers down into gaps
};

struct MergeStats {
  Bytes stacked_height = 0;  // after eq 9 stacking, before conflicts were resolved
  int conflicts = 0;         // pairs of buffers from different leaves that overlapped
  int reassigned = 0;        // temporaries moved to resolve them
  Bytes height = 0;          // final
};

struct MergeResult {
  std::vector<Bytes> offsets;  // one per interval
  MergeStats stats;
};

// Every interval must be laid out by exactly one leaf (std::logic_error otherwise: the parts
// must add up), and each leaf's own offsets must be valid among its buffers.
MergeResult MergeLayouts(std::span<const Interval> intervals, std::span<const LeafLayout> leaves,
                         Bytes alignment, const MergeParams& params = {});

// Moves each buffer, lowest first, to the lowest aligned offset where it overlaps nothing that
// shares a step with it. Keeps a valid layout valid; never raises a buffer.
void SlideDown(std::span<const Interval> intervals, std::vector<Bytes>& offsets, Bytes alignment);

}  // namespace roam
