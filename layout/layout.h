// Exact layout by combinatorial search (docs/layout.md): offsets for buffers with fixed
// lifetimes, minimising the height, with MiniMalloc's techniques (Moffitt, ASPLOS 2023).
//
// In: intervals (sizes that are multiples of the alignment, inclusive step ranges), the
// alignment, optional per-buffer alignments and fixed offsets, buffers pinned at the bottom, an
// optional capacity, a time limit and an optional warm start. Out: one offset per interval
// (intervals sharing a step never overlap), the height, a proven lower bound, the status of the
// problem and, apart from it, the outcome of the call. Same contract as ilp::SolveLayoutIlp, so
// either engine can stand in for the other.
//
// Thread-safe: a call keeps all its state to itself, so several may run at once (e.g. leaves
// solved on oneTBB workers). Deterministic: the same input gives the same offsets and node
// counts unless the time limit strikes.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"

namespace roam::layout {

// One switch per technique of the search. Every combination is exact: switching a technique
// off only makes the search larger (tests/layout/search_test.cpp runs them all).
struct SearchParams {
  // Cut time into sections and solve the groups of buffers that never share a section with
  // another group independently, at the root.
  bool static_decomposition = true;
  // The same after every placement, over the buffers not yet placed: a failure in one group
  // then never backtracks into another.
  bool dynamic_decomposition = true;
  // Only canonical solutions: placements in non-decreasing (offset, preorder index) order.
  bool canonical = true;
  // Skip a candidate whose offset is at or above the lowest top some unplaced free buffer could
  // reach now: that buffer could be moved under it, so the branch is dominated.
  bool dominance = true;
  // Backtrack when a section's floor plus the sizes of its unplaced buffers exceeds the
  // capacity.
  bool section_inference = true;
  // With canonical: later buffers sit at or above the last offset, so it is a floor of every
  // section in the inference above.
  bool monotonic_floor = true;
  // A section's floor is also the lowest offset any of its unplaced buffers can still take:
  // space below it is lost, which the inference above then sees at once.
  bool unallocated_floor = true;
  // ... but only in groups of at most this many buffers: its cost per node grows with the
  // group's buffers times their sections, and on whole training graphs (4,000 buffers) one
  // dive then took 8 s instead of 0.8 s (perf/RESULTS.md, "Layout search").
  int unallocated_floor_max_buffers = 1'000;
  // Round-robin over the static preorders under the node limit; false: the first only.
  bool multiple_preorders = true;
  // The preorders are MiniMalloc's three: by duration W (the lifetime in the intervals' own
  // time steps, end - start + 1), area A (size x W) and section total T (the largest load among
  // the buffer's sections), in the orders WAT, TAW and TWA, each key breaking the previous
  // one's ties. false: roam's four, by section total, by width counted in sections, by area
  // over sections and by size. A count of sections ranks a short buffer that crosses many
  // others' starts and ends as long; a duration says how long the program holds it. Longest
  // first fits MiniMalloc's public instances I and K, where the section counts found nothing
  // in 30 s, so `roam layout` turns it on for MiniMalloc's problems; off by default, as on
  // training graphs' lifetimes (op positions) it packs worse: remat's layered graphs of 500
  // and 1,000 ops no longer reached their theoretical peak within the node budget
  // (perf/RESULTS.md, "MiniMalloc's public benchmark").
  bool minimalloc_preorders = false;
  // Minimise the height by binary search over capacities; false: descend from the incumbent
  // one byte at a time (each probe asks for a layout lower than the best so far).
  bool capacity_search = true;
  // With capacity_search: a round's bisection above the proven bound stops after this many
  // probes that the node limit cut short (0: it goes on until it reaches the incumbent). On
  // tight instances the bound's probe decides, and a bisection of some twenty unanswered probes
  // per round took five times its nodes (perf/RESULTS.md, "Failure cache and a size preorder").
  int unanswered_bisections = 2;
  // Branch on the lowest section instead of on every candidate: at each node take a section
  // at the lowest floor and try each buffer that can rest there (its whole lifetime at that
  // floor), then the branch where none does (the section's floor rises to the lowest offset a
  // buffer covering it can still take). Every pushed-down layout is reached exactly once, so
  // canonical, dominance and monotonic_floor have nothing left to prune and are not used; on
  // a perfect packing the branch that leaves space empty fails at once (docs/layout.md).
  bool bottom_left = true;
  // ... but only in groups of at most this many buffers: on whole training graphs, where most
  // sections have slack, its gap branches made proofs slower (bert-base and gpt2-large at
  // batch 1 no longer reached max-live in 1 s; perf/RESULTS.md, "Layout search").
  int bottom_left_max_buffers = 1'000;
  // With bottom_left: a portfolio. The candidate branching (as with bottom_left off) over the
  // first preorder joins the round-robin as one more entry: each branching solves perfect
  // packings the other does not within the limit (perf/RESULTS.md, "Tight instances").
  bool portfolio = true;
  // With portfolio: from the second round on, its entry opens each round of the round-robin
  // instead of closing it. Its candidate nodes cost a fraction of the bottom-left ones (no
  // explanations), so a packing only it solves (MiniMalloc's instance K) is found after one
  // cheap run per round instead of after all the bottom-left runs of the round. The first
  // round keeps it last: most packings fit in one of its bottom-left dives, which a failed
  // candidate run of the full limit would only delay. Off by default: a packing that needs a
  // second round and that the candidate branching does not solve pays one such run per round
  // (roam's own tight instances: +4,300 to 4,450 nodes); `roam layout` turns it on.
  bool portfolio_first = false;
  // With bottom_left: of the sections at the lowest floor, branch on the one the fewest
  // buffers can rest on (fail first; none: only the empty branch); false: the earliest.
  bool fewest_candidates = true;
  // With bottom_left: conflict-directed backjumping. Every failure is explained by the
  // decisions that settled the sections it read (the placements covering a section below its
  // floor, and the empty-space decisions there); a node whose branch failed for reasons that do
  // not include its own decision fails at once with them, skipping its other branches, so a
  // search that went wrong early jumps back to the decision that caused the failure instead of
  // retrying every choice made in between in other parts of the time line.
  bool backjumping = true;
  // With backjumping: succeed-first value ordering. Each buffer counts how often its placement
  // was part of a failure's explanation (over the whole call: every preorder and round, and
  // every probe at the same capacity);
  // of the buffers that can rest at the chosen section, those counted least are tried first,
  // the preorder breaking ties. A buffer often blamed sits where the layout is hard to finish,
  // so a branch placing one that was rarely blamed is likelier to lead somewhere
  // (perf/RESULTS.md, "Backjumping and conflict ordering").
  bool conflict_ordering = true;
  // With bottom_left: remember the states whose search failed (the unplaced buffers of a
  // time-disjoint group and the floors of the sections they cover, as a 128-bit hash) with the
  // largest capacity each failed at, and fail at once when one comes back: perfect packings
  // reach the same skyline through many orders of placement, and restarts and later probes
  // revisit the same subtrees.
  bool failure_cache = true;
  // ... keeping at most this many states per call (about 64 bytes each, so 16 MiB; calls run
  // side by side on the optimizer's workers); beyond, none is added.
  std::int64_t failure_cache_entries = 1 << 18;
  // Free buffers with the same size, alignment and lifetime are interchangeable: only the
  // lowest-indexed unplaced one of each such class is a candidate.
  bool identical_buffers = true;
  // Restarts: this many more preorders, the first one's ranks shuffled within a window of a
  // quarter of the buffers (seeded, so calls stay deterministic), joining the round-robin
  // under the doubling node limit; a dive that went wrong early is then abandoned at the
  // limit instead of exhausted. 0: none.
  int random_preorders = 4;
  // Nodes per preorder and probe in the first round (plus the number of buffers, so one dive
  // always fits); the limit doubles every round until the time limit.
  std::int64_t initial_node_limit = 2'000;
};

struct LayoutParams {
  SearchParams search;
  double time_limit_s = 10.0;  // wall time of the whole call; 0 or less: no limit
  // A layout within this height is enough: the call stops at the first one found and reports
  // kInfeasible when it proves there is none. Without it, the height is minimised.
  std::optional<Bytes> capacity;
  // Indices of intervals placed contiguously from offset 0 in the order given (pass
  // ilp::RoamPinnedOrder(...) for the ILP's order). Other buffers may still use that space at
  // steps where the pinned ones are dead.
  std::vector<int> pinned_bottom;
  // Optional, one per interval: an offset fixed in advance, or -1 (MiniMalloc's offset column).
  std::vector<Bytes> fixed_offsets;
  // Optional, one per interval: an alignment for that buffer instead of the common one
  // (MiniMalloc's alignment column); sizes need not be multiples of it.
  std::vector<Bytes> buffer_alignments;
  // Stop after this many nodes in all (0: no limit); for tests and measurements that must not
  // depend on the machine's speed.
  std::int64_t max_nodes = 0;
  // Stop after this much work in all (0: no limit). Work counts the buffers and sections the
  // search's loops visit (docs/layout.md, "Work limits"). A node on one group of 8,000 buffers
  // costs tens of times one on 250, so a node limit alone bounds the time on small groups only
  // and a time limit then ends a search at a point that depends on the machine's load; a unit
  // of work costs about the same on any group (5-17 ns measured), so this bounds the time on
  // groups of any size and stays deterministic.
  std::int64_t max_work = 0;
  // Set by another thread (an interrupt): the call returns its best so far at the next node,
  // as when the time limit strikes.
  const std::atomic<bool>* stop = nullptr;
};

enum class LayoutStatus {
  kOptimal,     // height equals the proven lower bound
  kFeasible,    // with a capacity: a layout within it, not proven minimal
  kInfeasible,  // with a capacity: proven that no layout fits; offsets hold the best found
  kTimeLimit,   // the time, node or work limit struck first; offsets hold the best found
};
std::string_view ToString(LayoutStatus status);

// Whether the call itself worked; kError only when the search failed internally (e.g. out of
// memory), in which case offsets hold the warm start.
enum class LayoutCall { kOk, kError };
std::string_view ToString(LayoutCall call);

struct LayoutResult {
  std::vector<Bytes> offsets;
  Bytes height = 0;
  Bytes lower_bound = 0;  // proven: no layout is lower (at least max-live and the pinned top)
  Bytes warm_start_height = 0;
  LayoutStatus status = LayoutStatus::kTimeLimit;
  LayoutCall call = LayoutCall::kOk;
  int partitions = 0;      // time-disjoint groups solved independently
  std::int64_t nodes = 0;  // placements tried, over all probes
  std::int64_t work = 0;   // buffers and sections visited, over all probes (max_work)
  int probes = 0;          // capacities asked about
  // kTimeLimit from the node or work limit, not the clock or the stop flag: the answer is the
  // same on any machine.
  bool work_limited = false;
  double seconds = 0.0;
  std::string note;  // why the call stopped where it did
};

// Throws std::invalid_argument when a size is negative or not a multiple of its alignment, an
// index or a fixed offset is out of range, fixed buffers overlap, or the warm start is invalid
// (wrong size, overlapping, unaligned, or not honouring the pinned and fixed offsets). Without
// a warm start, the lower of best-fit and a greedy placement that honours the pins is used.
LayoutResult SolveLayout(std::span<const Interval> intervals, Bytes alignment,
                         const LayoutParams& params,
                         std::optional<std::span<const Bytes>> warm_start = std::nullopt);

// Offsets of the pinned buffers (contiguous from 0 in the order given) merged into
// fixed_offsets, -1 for the others; what SolveLayout fixes.
std::vector<Bytes> FixedOffsets(std::span<const Interval> intervals, const LayoutParams& params);

}  // namespace roam::layout
