// Rematerialization under a memory budget (docs/remat.md): drop some forward outputs and
// recompute them later, so that the peak of the planned arena fits a budget at the least
// added compute.
//
// In: a finalized graph (op costs optional), a budget in bytes, RematParams. Out: a
// RematResult holding a remat schedule, the rewritten graph it induces (an ordinary
// roam-graph-v1 whose copies say which op they recompute) and a validated plan of it whose
// order is the schedule, so the budget is checked against the plan's own order.
//
// The model, schedules and the rewrite: remat/model.h; the lower bounds: remat/bound.h.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/deadline.h"
#include "core/graph.h"
#include "core/plan.h"
#include "core/types.h"
#include "remat/bound.h"
#include "remat/model.h"
#include "remat/params.h"
#include "remat/status.h"

namespace roam::remat {

// "greedy", "checkpoint" (Chen et al.'s sqrt(n) segments), "lookahead" (the base order
// simulated under the budget, dropping the value cheapest to bring back per byte and step,
// with recursive recomputation), "ilp" (MOCCASIN's retention intervals on the base order,
// solved by GLPK, warm-started from the greedy), "blocks" (the greedy's schedule improved by
// the block pass over the partition's subgraph tree), "best" (the cheapest of them, improved
// by the block pass; the ilp only on graphs of at most ilp_max_ops ops).
std::span<const std::string_view> MethodNames();

// One point of the memory/compute trade-off.
struct TradeOff {
  Bytes peak = 0;               // theoretical peak of the schedule's rewritten graph
  double compute_overhead = 0;  // recomputed cost / original total cost
  Schedule schedule;
};

struct RematResult {
  Bytes budget = 0;
  Bytes no_remat_peak = 0;  // theoretical peak of the base order without recomputation
  bool feasible = false;    // plan.summary.actual_peak <= budget
  std::string method;       // the method whose schedule was kept
  // The order the plan's original computations follow: params.base_order, or (best only) one
  // of params.start_orders whose no-remat peak is below it, fit.reorder_orders or
  // fit.fallback_base_orders.
  std::string start_order;
  // kOptimal (the plan meets lower_bound, or recomputes nothing), kOptimalInOrder (the ilp
  // proved it optimal among schedules keeping the base order: order_lower_bound), kFeasible
  // (a heuristic's), kTimeLimit (the ilp's best when time ran out; not feasible: nothing found
  // in time), kInfeasibleProven (the budget is below peak_lower_bound or the compute bound's
  // reach), kInfeasible, kError (the ilp's solver failed; the heuristic's answer stands).
  // ToString gives the report's label.
  Status status = Status::kInfeasible;
  std::string solver;  // the ilp's solver call, "ok" or "error: ..." (empty: not run)
  // On the compute overhead of every schedule within the budget, whatever its order (the
  // compute lower bound, params.overhead_bound; 0 where none is known).
  double lower_bound = 0;
  // The ilp's bound: on schedules that keep the base order, with at most ilp.max_computations
  // computations per op (MOCCASIN's and Checkmate's problem); 0 where the ilp proved none.
  double order_lower_bound = 0;
  double compute_overhead = 0;
  double original_cost = 0;
  double recompute_cost = 0;
  // Of recompute_cost's schedule as its fit loop built it, what the prune in the arena
  // (fit.prune) took off: the loops that run after a plan are held to its cost as built.
  double prune_saved = 0;
  Schedule schedule;
  Rewritten rewritten;
  Plan plan;  // of rewritten.graph, validated, order == rewritten.order
  double seconds = 0;
  // PeakLowerBound: no schedule's peak is below it.
  Bytes peak_lower_bound = 0;
  // What feasible measured against the budget (params.fit.by): the arena, or with "theoretical"
  // the plan's theoretical peak (its arena, plan.summary.actual_peak, may then be above).
  std::string fit_by = "arena";
  // The plan's time limit struck before every search had done its work.
  bool timed_out = false;
  // The plan's layout is a repacked one (params.fit.repack): its schedule's arena missed the
  // budget in the fit loop and repacking its layout window by window brought it within.
  bool repacked = false;
  // Windows repacking solved for this plan, over every layout it repacked (at most
  // params.fit.repack_plan_subproblems).
  int repack_subproblems = 0;
};

// Plans under budget (bytes of the arena, or of the theoretical peak with params.fit.by
// "theoretical"). An infeasible budget returns feasible = false with the plan of the smallest
// peak found. The searches are bounded by work (params), so the plan does not depend on the
// machine; deadline (default: params.time_limit_s from now) is an outer cap, and where it
// strikes the best plan so far is returned.
RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params = {});
RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params,
                      const Deadline& deadline);

// Whether result.lower_bound is a bound on the plan's overhead: not where the budget is proven
// out of reach, since no schedule meets it at any cost (the report says "none").
inline bool HasComputeBound(const RematResult& result) {
  return result.status != Status::kInfeasibleProven;
}

// Theoretical peak of graph's base order without recomputation (the reference of ratios).
Bytes NoRematPeak(const Graph& graph, const RematParams& params = {});

// The budget a ratio of the reference peak stands for, rounded down so that a plan within it is
// within the ratio (the one rule of `--budget-ratio`, the sweep and the benchmarks); nullopt
// where the ratio is not finite, negative, or the budget beyond roam's byte range.
std::optional<Bytes> BudgetOfRatio(Bytes reference, double ratio);

// The trade-off curve: for each budget ratio (of the no-remat peak), the least compute
// found; points with feasible = false were out of reach.
struct SweepPoint {
  double ratio = 0;
  Bytes budget = 0;
  Bytes peak = 0;  // actual peak of the plan
  double compute_overhead = 0;
  bool feasible = false;
  std::string method;
  double seconds = 0;  // the first point's include the work the points share
  // The compute lower bound at this budget (params.overhead_bound.in_sweep; else 0).
  double lower_bound = 0;
  // The ratio whose plan this is: its own, or a lower budget's that costs less (a plan within
  // a lower budget is within this one too, so the curve never rises with the budget).
  double plan_ratio = 0;
};
// The greedy descends once for all budgets (each point gets what a run for its budget alone
// would) and the checkpoint's segmentations are evaluated once; then each point takes the
// cheapest plan of a budget at most its own (TakeCheaperPlansFromBelow).
std::vector<SweepPoint> Sweep(const Graph& graph, std::span<const double> ratios,
                              const RematParams& params = {});
std::vector<SweepPoint> Sweep(const Graph& graph, std::span<const double> ratios,
                              const RematParams& params, const Deadline& deadline);

// Each point, in any order of budgets, takes the plan of the cheapest feasible point whose budget
// is at most its own where that costs less than its own plan (feasible too, then): its peak,
// overhead, method and plan_ratio; its budget, bound and seconds stay. The searches are not
// monotone in the budget (random-layered-250 cost 11.73% at 64% and 10.24% at 62%).
void TakeCheaperPlansFromBelow(std::vector<SweepPoint>& points);

}  // namespace roam::remat
