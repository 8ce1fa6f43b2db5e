// Merge: ROAM section IV-B/C. Joins the leaves' results into one plan: orders concatenated
// (ROAM eq 3), layouts stacked with activations at the bottom (eq 9), address conflicts between
// storages of different leaves resolved by re-placing the conflicting temporaries, then a pass
// that slides buffers down where a gap allows. Bookkeeping and greedy placement, and the layout
// search (layout/) for the conflicting temporaries; no other solver.
//
// In: the leaves' orders; the intervals of every planned storage under the concatenated order
// (model.planned order) and, per leaf, the buffers it lays out with offsets relative to the
// leaf's own base, the first `pinned` of them its activations (contiguous from 0, ROAM eq 9).
// Out: one offset per interval, a valid layout (CheckLayout), and what the merge had to do.
#pragma once

#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"

namespace roam {

// ROAM eq 3. Throws std::logic_error when the parts do not add up to a permutation of
// 0..num_ops-1 (an op missing or repeated).
std::vector<OpId> ConcatenateOrders(std::span<const std::vector<OpId>> leaf_orders, int num_ops);

struct LeafLayout {
  std::vector<int> buffers;      // interval indices this leaf lays out
  std::vector<Bytes> offsets;    // relative to the leaf's base, one per buffer
  std::vector<char> activation;  // per buffer: pinned at the bottom (ROAM eq 9)
};

struct MergeParams {
  bool slide_down = true;  // after stacking and reassignment, move buffers down into gaps
  // Re-place the conflicting temporaries with the layout search (layout/layout.h), every
  // other buffer fixed where the stacking put it, starting from best-fit's reassignment; the
  // lower of the two (after slide_down) is kept, so never worse than best-fit. false:
  // best-fit only.
  bool search_reassignment = true;
  // Budget of that search: nodes (deterministic) and wall time (a safety net; 0: none).
  // 2,000: on every preset the lower merge never mattered (the optimizer's final layout pass
  // reaches max-live either way), and 20,000 took 0.75 s of ViT-B/16's 4 s at batch 1.
  std::int64_t search_max_nodes = 2'000;
  double search_time_limit_s = 2.0;
  // The search is skipped when the lifted buffers and those sharing a step with them are more
  // than this: at GPT scale they are thousands, and best-fit's reassignment stands.
  int search_max_buffers = 4'000;
  // Set by another thread (an interrupt): the search stops at its next node.
  const std::atomic<bool>* stop = nullptr;
};

struct MergeStats {
  Bytes stacked_height = 0;   // after eq 9 stacking, before conflicts were resolved
  int conflicts = 0;          // pairs of buffers from different leaves that overlapped
  int reassigned = 0;         // temporaries moved to resolve them
  Bytes best_fit_height = 0;  // final height had they been re-placed best-fit
  bool by_search = false;     // the search's reassignment was kept (lower than best-fit's)
  Bytes height = 0;           // final
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
