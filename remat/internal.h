// Shared between the remat methods and the driver; not part of the stage's interface.
#pragma once

#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/deadline.h"
#include "core/memory_model.h"
#include "partition/partition.h"
#include "remat/remat.h"

namespace roam::remat::detail {

class GreedyState;  // greedy_state.h

// The partition of a method's start order where the caller computed it once (Context), or
// nullptr for the method to compute it; a nullopt in it: the order has no partition.
using PartitionArg = const std::optional<SubgraphTree>*;
// The partition of start (PartitionGraph), or nullopt where that order has none.
std::optional<SubgraphTree> PartitionOf(const Graph& graph, const MemoryModel& model,
                                        const Schedule& start);

// The baseline order of that name as remat starts from it: with its weight-update branches
// placed by the first of params.update_placements that does not raise the order's theoretical
// peak, where the graph has such branches; else as the baseline makes it.
Schedule StartOrder(std::string_view name, const Graph& graph, const MemoryModel& model,
                    const RematParams& params);

// The order every method starts from: StartOrder of params.base_order, one computation per op.
Schedule BaseSchedule(const Graph& graph, const RematParams& params);

// A schedule's rewritten graph with its memory model and lifetimes under the schedule.
struct Evaluated {
  Rewritten rewritten;
  MemoryModel model;
  std::vector<Lifetime> lifetimes;
  std::vector<Bytes> profile;
  Bytes peak = 0;
  Step peak_step = 0;  // the first step at the peak
  double recompute_cost = 0;
};
Evaluated Evaluate(const Graph& graph, std::span<const OpId> schedule, const RematParams& params);

// Recomputed cost of a schedule: the costs of every repeat.
double RecomputeCost(const Graph& graph, std::span<const OpId> schedule);

// A schedule's original computations: each op's first listing, in schedule order (the order
// the schedule keeps).
Schedule Originals(const Graph& graph, std::span<const OpId> schedule);

struct MethodResult {
  std::string method;  // which method found it
  Schedule schedule;
  Bytes peak = 0;
  double recompute_cost = 0;
  Status status = Status::kInfeasible;
  double lower_bound = 0;  // on the recompute cost, when proven (else 0)
  std::string solver;      // the exact method's solver call: "ok" or "error: ..."; else empty
  // The order its original computations follow, where not the base order (best's reorder and
  // fallback); empty: the base order.
  std::string order;
};

// Whether a plan at recompute cost `cost` is cheaper than one at `incumbent` by more than
// rounding: what replaces a plan that fits, and what a search must reach to be worth going on.
inline bool Cheaper(double cost, double incumbent) { return cost < incumbent - 1e-9; }

// Of two plans for one budget, given their peaks and recompute costs: the one within it at less
// compute (Cheaper), else the lower peak. The one rule every "best of" in remat follows.
inline bool BetterPlan(Bytes peak_a, double cost_a, Bytes peak_b, double cost_b, Bytes budget) {
  const bool fa = peak_a <= budget, fb = peak_b <= budget;
  if (fa != fb) return fa;
  if (fa) return Cheaper(cost_a, cost_b);
  return peak_a < peak_b;
}

inline bool Better(const MethodResult& a, const MethodResult& b, Bytes budget) {
  return BetterPlan(a.peak, a.recompute_cost, b.peak, b.recompute_cost, budget);
}

// Whether r fits budget at a recompute cost no schedule within it goes below (cost_bound, from
// the compute lower bound): then it is optimal, and no search can improve on it.
inline bool MeetsCostBound(const MethodResult& r, Bytes budget, double cost_bound) {
  return r.peak <= budget && r.recompute_cost <= cost_bound;
}

// How the greedy evaluates a schedule: incrementally (GreedyState, what runs), or with a full
// Rewrite and memory model per eviction (the reference the tests hold the former to: both
// make the same choices).
enum class GreedyEvaluation { kIncremental, kReference };

// Evicts, at the current peak step, the live storage with the best score (RematParams::
// greedy_score) per unit of recompute cost, recomputing it just before its next use, until
// the peak is at most budget or nothing can be evicted. Keeps the lowest-peak schedule seen.
// Where deadline (optional) has passed, it stops with what it has.
MethodResult Greedy(const Graph& graph, Schedule start, Bytes budget, const RematParams& params,
                    GreedyEvaluation evaluation = GreedyEvaluation::kIncremental,
                    const Deadline* deadline = nullptr);

// Per op: OpCost, the costs the greedy and the block passes rank recomputations by.
std::vector<double> OpCosts(const Graph& graph);

// The greedy's polish of a schedule within budget (result.peak <= budget): its prune, its swap
// search, and the prune again where the swap gained; never dearer, never over budget.
MethodResult Polish(const Graph& graph, MethodResult result, Bytes budget,
                    const RematParams& params);

// One greedy descent for several budgets, in decreasing order: the result for each budget is
// what Greedy would return for it alone (the schedule when the peak first fits, pruned for
// that budget), at the cost of one descent.
std::vector<MethodResult> GreedyDescent(
    const Graph& graph, Schedule start, std::span<const Bytes> budgets, const RematParams& params,
    GreedyEvaluation evaluation = GreedyEvaluation::kIncremental,
    const Deadline* deadline = nullptr);

// A schedule's repeats (positions of every computation after an op's first), dearest first by
// costs (OpCosts), ties in schedule order: what both prunes try to drop.
std::vector<std::pair<double, size_t>> RepeatsDearestFirst(std::span<const OpId> schedule,
                                                           const std::vector<double>& costs);

// The greedy's prune on its own: repeats dropped, dearest first, while result stays within
// budget (trials evaluated on scratch, whose state it leaves undefined).
void PruneRepeats(const Graph& graph, const std::vector<double>& costs, Bytes budget,
                  const RematParams& params, GreedyState& scratch, MethodResult& result);

// The prune in the arena (arena_prune.cpp): on a schedule whose layout `offsets` (in
// eval.model.planned order) fits budget, repeats are dropped, dearest first, where the schedule
// stays within budget by its theoretical peak and the layout still fits it with only the
// buffers that now live longer placed again: each at the lowest offset free over its new
// lifetime, or, where one lands above the budget, the buffers around it searched again at the
// budget (params.fit.prune.repair_margins), else the layout repacked towards it (at most
// params.fit.prune.repack_windows windows a trial); every window out of windows_left. At most
// params.fit.prune.max_trials trials; method, eval and offsets are updated together. Returns
// the repeats dropped.
int PruneInArena(const Graph& graph, Bytes budget, const RematParams& params,
                 const Deadline& deadline, MethodResult& method, Evaluated& eval,
                 std::vector<Bytes>& offsets, int& windows_left);

// Ruin and recreate (lns.cpp) on a schedule within target by its theoretical peak,
// params.lns's rounds: returns incumbent unless a better schedule within target was found
// (method "lns"). Fitting by the arena, better means cheaper and laid out within arena_budget
// (the user's budget; a fit retry's target is below it). Past deadline it returns the best so
// far.
MethodResult RuinAndRecreate(const Graph& graph, const MethodResult& incumbent, Bytes target,
                             Bytes arena_budget, const RematParams& params,
                             const Deadline& deadline);

// Chen et al.: the forward split into k segments; the activations inside a segment that the
// backward reads are recomputed, segment by segment, right before the backward first needs
// one. Tries k = 1 .. factor * sqrt(forward ops) and keeps the cheapest schedule within
// budget (else the lowest peak).
MethodResult Checkpoint(const Graph& graph, const Schedule& start, Bytes budget,
                        const RematParams& params, PartitionArg partition = nullptr);
// Checkpoint in two halves, so that a sweep evaluates the segmentations once: every schedule
// tried (the start first), then the one Checkpoint keeps for a budget.
std::vector<MethodResult> CheckpointOptions(const Graph& graph, const Schedule& start,
                                            const RematParams& params,
                                            PartitionArg partition = nullptr);
MethodResult PickCheckpoint(std::span<const MethodResult> options, Bytes budget);

// The base order start simulated under budget (lookahead.cpp): before a computation that
// would not fit, drop the held value with the least estimated recompute cost per byte and per
// step until its next use; recompute dropped inputs (recursively) where they are read. A
// portfolio of scores and targets, checked by roam's memory model, the cheapest within budget
// refined. Bounded by its work (params.lookahead); past deadline it returns the best so far,
// fitting or not. Status "feasible" or "infeasible" (then the lowest peak).
MethodResult Lookahead(const Graph& graph, const Schedule& start, Bytes budget,
                       const RematParams& params, const Deadline& deadline);

// MOCCASIN's retention intervals on the base order start, as a MILP solved by GLPK within
// time_limit_s, warm-started from warm where warm fits the budget and has the MILP's shape.
// Returns warm (its method kept) unless the MILP found a cheaper schedule within budget
// (method "ilp"); status "optimal", "time-limit", "infeasible-proven" or "error" says what
// the MILP proved, lower_bound is its bound on the recompute cost. Its searches are bounded by
// params.ilp's work limits, time_limit_s is an outer cap. cost_bound: a recompute cost no
// schedule within budget goes below (the compute lower bound); a schedule that meets it ends
// the search at once.
MethodResult Exact(const Graph& graph, const Schedule& start, Bytes budget,
                   const RematParams& params, const MethodResult& warm, double time_limit_s,
                   double cost_bound = -std::numeric_limits<double>::infinity());

// The block pass (blocks.cpp) on a schedule within budget: per group of consecutive
// independent subgraphs of the partition of start (a forward segment and its mirrored backward
// segment each), the copies of the group's ops are dropped and re-chosen, with the rest fixed,
// among the greedy's evictions inside the group: the cheapest set whose bytes freed cover, added
// up, what the rest holds over the budget, verified (and repaired) by the greedy's state.
// Keeps a change only when the whole schedule stays within budget and is cheaper; returns
// incumbent (not over budget, never dearer) when nothing improved; method "blocks" otherwise.
MethodResult ImproveByBlocks(const Graph& graph, const Schedule& start,
                             const MethodResult& incumbent, Bytes budget, const RematParams& params,
                             double time_limit_s, PartitionArg partition = nullptr);

// Per op: whether it belongs to the forward (phase forward; a graph with no phases: the ops of
// start up to its peak).
std::vector<char> ForwardOps(const Graph& graph, const Schedule& start, const RematParams& params);

// Per op: its group of consecutive independent subgraphs of the partition of start (-1: none,
// e.g. weight updates). Groups gather blocks in the order of their forward parts until they
// hold at least params.blocks.group_ops forward ops; num_groups says how many (0: no partition).
std::vector<int> GroupOfOp(const Graph& graph, const RematParams& params, const Schedule& start,
                           int& num_groups, PartitionArg partition = nullptr);

// The budget split over the chain of blocks (blocks_dp.cpp) on a schedule within budget: the
// copies of every group of blocks (GroupOfOp with blocks_dp_group_ops) are dropped; each
// group's options (none, the incumbent's own copies, every subset of its evictions at the
// start of its backward, inserted so that one copy serves all later readers) are measured
// alone on what is left by the greedy's state, as the bytes each keeps off the arena while
// the deeper groups run and the excess over the budget at its own steps; a dynamic programme
// over the groups in forward order (state: bytes the outer groups keep off) picks the
// cheapest combination that covers every group's excess. The assembled schedule is checked by
// roam's memory model; one over budget is retried with the excess subtracted (at most
// blocks_dp_retries times). Returns incumbent (never dearer, never over budget) unless a
// cheaper schedule within budget was found (method "blocks-dp").
MethodResult SplitBudgetByBlocks(const Graph& graph, const Schedule& start,
                                 const MethodResult& incumbent, Bytes budget,
                                 const RematParams& params, double time_limit_s,
                                 PartitionArg partition = nullptr);

// The schedule seeded by the compute bound's witness (witness.cpp): the base order start with
// one copy of each op of bound.redone right before the first step after bound.cut that reads
// it (directly or through another such copy), then the greedy's descent from there and its
// polish. Returns incumbent unless that schedule fits the budget and is cheaper than incumbent
// (or incumbent does not fit); method "witness".
MethodResult FollowWitness(const Graph& graph, const Schedule& start, const MethodResult& incumbent,
                           Bytes budget, const RematParams& params, const OverheadBound& bound);

}  // namespace roam::remat::detail
