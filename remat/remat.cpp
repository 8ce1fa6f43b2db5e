// The remat driver (docs/remat.md, "Methods"): a budget's plan runs the fit loop (fit.cpp) for
// best, for each fit.alone builder and from each of best's other start orders, keeping the
// cheapest; and the trade-off sweep. The context they read is built once per plan
// (context.cpp).
#include "remat/remat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "baseline/orders.h"
#include "core/bytes.h"
#include "core/deadline.h"
#include "core/error.h"
#include "remat/bound.h"
#include "remat/context.h"
#include "remat/fit.h"
#include "remat/internal.h"
#include "remat/methods.h"

namespace roam::remat {

namespace {

using detail::Call;
using detail::Cheaper;
using detail::Context;
using detail::Find;
using detail::Fit;
using detail::MethodResult;
using detail::PlanMemo;
using detail::PresetOf;
using detail::Shared;
using detail::TimeLeft;

void CheckHasOps(const Graph& graph) {
  if (graph.num_ops() == 0)
    throw InputError("graph " + (graph.name.empty() ? std::string("(unnamed)") : graph.name) +
                     " has no ops: there is nothing to schedule or recompute");
}

void CheckParams(const RematParams& params) {
  if (std::find(MethodNames().begin(), MethodNames().end(), params.method) == MethodNames().end())
    throw InputError("unknown remat method \"" + params.method + "\"");
  for (const Preset* preset : {&params.best, &params.sweep}) {
    for (const std::string& name : preset->build)
      if (Find(name).build == nullptr)
        throw InputError("remat method \"" + name + "\" improves a schedule; list it in improve");
    for (const std::string& name : preset->improve)
      if (Find(name).improve == nullptr)
        throw InputError("remat method \"" + name + "\" builds a schedule; list it in build");
  }
  for (const std::string& name : params.fit.alone)
    if (Find(name).build == nullptr)
      throw InputError("remat fit.alone lists \"" + name + "\", which builds no schedule");
  if (params.alignment <= 0) throw InputError("alignment must be positive");
  if (params.fit.repack_plan_subproblems < 0)
    throw InputError("remat fit.repack_plan_subproblems must be at least 0");
  for (int margin : params.fit.prune.repair_margins)
    if (margin < 0) throw InputError("remat fit.prune.repair_margins must not be negative");
  if (params.fit.search_wide_max_buffers < 0)
    throw InputError("remat fit.search_wide_max_buffers must be at least 0");
  if (!(params.fit.layout_reserve >= 0 && params.fit.layout_reserve < 1))
    throw InputError("remat fit.layout_reserve must be in [0, 1)");
  if (!(params.overhead_bound.time_share > 0 && params.overhead_bound.time_share <= 1))
    throw InputError("remat overhead_bound.time_share must be in (0, 1]");
  if (params.fit.search_max_work < 0)
    throw InputError("remat fit.search_max_work must be at least 0 (0: no limit)");
  if (std::find(kGreedyScores.begin(), kGreedyScores.end(), params.greedy.score) ==
      kGreedyScores.end())
    throw InputError("unknown greedy score \"" + params.greedy.score + "\" (log, peak, lifetime)");
  for (const std::string& placement : params.update_placements)
    if (std::find(kUpdatePlacements.begin(), kUpdatePlacements.end(), placement) ==
        kUpdatePlacements.end())
      throw InputError("unknown remat update placement \"" + placement +
                       "\" (when-ready, scheduled, split, at-end)");
  if (std::find(kFitBy.begin(), kFitBy.end(), params.fit.by) == kFitBy.end())
    throw InputError("unknown remat fit.by \"" + params.fit.by + "\" (arena, theoretical)");
  if (std::find(kCheckpointCuts.begin(), kCheckpointCuts.end(), params.checkpoint.cuts) ==
      kCheckpointCuts.end())
    throw InputError("unknown checkpoint cut rule \"" + params.checkpoint.cuts +
                     "\" (both, insensitive, ops)");
  for (const auto& [orders, what] :
       {std::pair{&params.fit.fallback_base_orders, "fallback base"},
        std::pair{&params.fit.reorder_orders, "reorder"}, std::pair{&params.start_orders, "start"}})
    for (const std::string& order : *orders)
      if (std::find(OrderNames().begin(), OrderNames().end(), order) == OrderNames().end())
        throw InputError("unknown " + std::string(what) + " order \"" + order + "\"");
}

// The peak a result's budget bounds (fit.by).
Bytes Reached(const RematResult& r) {
  return r.fit_by == "theoretical" ? r.plan.summary.theoretical_peak : r.plan.summary.actual_peak;
}

// Of two plans for one budget: the one that fits at less compute, else the lower peak.
bool BetterPlan(const RematResult& a, const RematResult& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.feasible) return Cheaper(a.recompute_cost, b.recompute_cost);
  return Reached(a) < Reached(b);
}

// result becomes the better of itself and other, a later search for the same budget; the
// seconds of both add up.
void KeepBetter(RematResult& result, RematResult other) {
  other.seconds += result.seconds;
  if (BetterPlan(other, result)) {
    result = std::move(other);
  } else {
    result.seconds = other.seconds;
  }
}

// What a later search for the same budget must beat: the cheaper of what the caller's must and
// result, where result fits, at result's cost before its prune in the arena, since the later
// search's fit loop compares its schedules before theirs.
double ToBeat(const Shared& shared, const RematResult& result) {
  return result.feasible ? std::min(shared.cost_to_beat, result.recompute_cost + result.prune_saved)
                         : shared.cost_to_beat;
}

// `best` picks its schedule by the theoretical peak; when the layout of the pick misses the
// budget, the retries lower the target for all builders at once, which can end above the
// budget, or dearer, where one builder's own retries fit (the targets they reach differ). So
// where best ends infeasible, repacked, pruned in the arena, or on the schedule of a builder of
// fit.alone, that builder is planned alone too and kept when it does better: best is never
// dearer than a pick of it.
RematResult PlanPreset(const Context& ctx, Bytes budget, const RematParams& params,
                       Schedule& greedy_state, const Shared& shared) {
  RematResult result = Fit(ctx, budget, params, greedy_state, shared);
  if (params.method != "best") return result;
  for (const std::string& name : params.fit.alone) {
    if (ctx.deadline.Expired()) break;
    // A repacked plan is a miss of best's retries rescued after them; the builder's own retries
    // reach other targets, whose misses may repack at less compute.
    // A pruned plan was picked before its prune: the builder's own plan may prune further.
    if (result.feasible && result.method != name && !result.repacked && result.prune_saved <= 0)
      continue;
    RematParams alone = params;
    alone.method = name;
    Schedule unused;
    Shared plan_only;  // nothing a sweep shares: the builder runs as if named
    plan_only.memo = shared.memo;
    plan_only.cost_to_beat = ToBeat(shared, result);
    KeepBetter(result, Fit(ctx, budget, alone, unused, plan_only));
  }
  return result;
}

// `best` from each order of start_orders whose no-remat peak is below the base order's (with
// start_ties also those at its peak, with start_as_given also from the base order as the
// baseline makes it), each in a context of its own, keeping the better plan: recomputing from
// a lower order has less to remove. What the base order's plan shares (the sweep's greedy descent,
// the checkpoint's schedules) is of the base order; the compute bound is of the budget and is
// shared. Where the plan recomputes nothing or meets the bound, nothing is cheaper and no other
// start runs.
RematResult FromOtherStarts(const Context& ctx, Bytes budget, const RematParams& params,
                            const Shared& shared, RematResult result) {
  if (params.method != "best") return result;
  for (const Context::Start& start : ctx.OtherStarts(params)) {
    if (ctx.deadline.Expired()) break;
    if (result.feasible &&
        (result.recompute_cost <= 0 || result.recompute_cost <= shared.cost_bound))
      break;
    Shared bound_only = shared;
    bound_only.greedy = nullptr;  // the base order's
    bound_only.checkpoint = nullptr;
    bound_only.cost_to_beat = ToBeat(shared, result);
    Schedule greedy_state;
    RematResult r = PlanPreset(*start.context, budget, start.params, greedy_state, bound_only);
    r.no_remat_peak = result.no_remat_peak;  // the reference stays the base order's
    KeepBetter(result, std::move(r));
  }
  return result;
}

// The in-order lower bound of the order the plan's original computations follow (its start
// order; none where they do not keep it): order_lower_bound, the higher of it and the ilp's,
// and status optimal-in-order where the plan meets it. After the plan, so that it changes no
// search: it proves, it does not steer.
void BoundInOrder(const Context& ctx, Bytes budget, const RematParams& params,
                  RematResult& result) {
  if (!params.order_bound.enabled || !result.feasible || result.recompute_cost <= 0 ||
      result.status == Status::kOptimal || ctx.deadline.Expired())
    return;
  const auto started = std::chrono::steady_clock::now();
  // The order as remat started from it, or (a start of its own) as the baseline makes it.
  const Schedule originals = detail::Originals(ctx.graph, result.schedule);
  Schedule order = result.start_order == params.base_order
                       ? ctx.start
                       : detail::StartOrder(result.start_order, ctx.graph, ctx.model, params);
  if (originals != order) order = ScheduleOrder(result.start_order, ctx.graph, ctx.model);
  if (originals != order) return;
  const OrderBound bound =
      InOrderLowerBound(ctx.graph, order, budget, params, TimeLeft(ctx), result.compute_overhead);
  if (bound.infeasible)
    throw std::logic_error("remat: a plan fits a budget the in-order lower bound rules out");
  result.order_lower_bound = std::max(result.order_lower_bound, bound.overhead);
  if (result.status != Status::kOptimalInOrder &&
      result.compute_overhead <= result.order_lower_bound * (1 + 2e-6))
    result.status = Status::kOptimalInOrder;
  result.seconds += SecondsSince(started);
  result.plan.summary.seconds = result.seconds;
}

// The plan, with the compute lower bound of its budget: it holds for every schedule, whatever
// its order, and a plan that meets it is proven optimal.
RematResult Plan(const Context& ctx, Bytes budget, const RematParams& params,
                 Schedule& greedy_state, Shared shared = {}) {
  PlanMemo memo;
  memo.repack.left = params.fit.repack_plan_subproblems;
  shared.memo = &memo;
  // What the plan spent, and whether the deadline cut any of its searches short: the kept
  // result may be of a search that ended before a later one was cut.
  const auto spent = [&](RematResult r) {
    r.repack_subproblems = params.fit.repack_plan_subproblems - memo.repack.left;
    r.timed_out = r.timed_out || ctx.deadline.Expired();
    return r;
  };
  // The bound first: the witness follows it, and a schedule that meets it ends the search.
  if (params.overhead_bound.cuts <= 0) {
    RematResult result = FromOtherStarts(ctx, budget, params, shared,
                                         PlanPreset(ctx, budget, params, greedy_state, shared));
    BoundInOrder(ctx, budget, params, result);
    return spent(std::move(result));
  }
  const auto started = std::chrono::steady_clock::now();
  RematParams capped = params;
  capped.overhead_bound.time_limit_s =
      std::min(params.overhead_bound.time_limit_s,
               std::max(0.001, params.overhead_bound.time_share * TimeLeft(ctx)));
  const OverheadBound bound = OverheadLowerBound(ctx.graph, budget, capped);
  const double bound_seconds = SecondsSince(started);
  shared.bound = &bound;
  shared.bound_budget = budget;
  if (!bound.infeasible) shared.cost_bound = bound.overhead * ctx.original_cost * (1 + 2e-6);
  RematResult result = PlanPreset(ctx, budget, params, greedy_state, shared);
  result = FromOtherStarts(ctx, budget, params, shared, std::move(result));
  result.seconds += bound_seconds;
  if (bound.infeasible && result.feasible)
    throw std::logic_error("remat: a plan fits a budget the compute lower bound rules out");
  if (bound.infeasible) result.status = Status::kInfeasibleProven;
  result.lower_bound = bound.overhead;
  if (result.feasible && result.compute_overhead <= result.lower_bound * (1 + 2e-6))
    result.status = Status::kOptimal;
  result.plan.summary.seconds = result.seconds;
  BoundInOrder(ctx, budget, params, result);
  return spent(std::move(result));
}

}  // namespace

MethodResult detail::Improve(std::string_view name, const Context& ctx, const RematParams& params,
                             const MethodResult& incumbent, Bytes target,
                             const Deadline& deadline) {
  Schedule unused;
  const Shared none;
  Call call{ctx, params, unused, none, true, target, deadline};
  const detail::Improver improve = Find(name).improve;
  if (improve == nullptr) throw InputError("\"" + std::string(name) + "\" is no improver");
  return improve(call, incumbent, target);
}

std::span<const std::string_view> MethodNames() { return kMethodNames; }

Bytes NoRematPeak(const Graph& graph, const RematParams& params) {
  MemoryModel model = BuildMemoryModel(graph, params.alignment);
  return TheoreticalPeak(graph, model, detail::StartOrder(params.base_order, graph, model, params));
}

std::optional<Bytes> BudgetOfRatio(Bytes reference, double ratio) {
  const double value = static_cast<double>(reference) * ratio;
  if (!BytesFromDouble(value)) return std::nullopt;  // not finite, negative or beyond roam's bytes
  // A relative hair above: a ratio such as 0.8, or one a sweep reached by subtraction, lands a
  // rounding error below the exact product, which must not cost a byte.
  return std::min(static_cast<Bytes>(std::floor(value * (1.0 + 1e-12))), kMaxBytes);
}

RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params) {
  return PlanRemat(graph, budget, params, Deadline(params.time_limit_s));
}

RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params,
                      const Deadline& deadline) {
  const auto started = std::chrono::steady_clock::now();
  CheckHasOps(graph);
  CheckParams(params);
  const Context ctx(graph, params, deadline);
  const double setup = SecondsSince(started);
  Schedule greedy_state;
  RematResult r = Plan(ctx, budget, params, greedy_state);
  r.seconds += setup;
  r.plan.summary.seconds = r.seconds;
  return r;
}

std::vector<SweepPoint> Sweep(const Graph& graph, std::span<const double> ratios,
                              const RematParams& sweep_params) {
  return Sweep(graph, ratios, sweep_params, Deadline(sweep_params.time_limit_s));
}

std::vector<SweepPoint> Sweep(const Graph& graph, std::span<const double> ratios,
                              const RematParams& sweep_params, const Deadline& deadline) {
  CheckHasOps(graph);
  const auto started = std::chrono::steady_clock::now();
  CheckParams(sweep_params);
  RematParams params = sweep_params;
  params.best = params.sweep;  // the sweep's preset is what `best` runs at each point
  if (!params.overhead_bound.in_sweep) params.overhead_bound.cuts = 0;
  const Context ctx(graph, params, deadline);
  const Bytes reference = ctx.no_remat_peak;
  std::vector<Bytes> budgets;
  for (double ratio : ratios) {
    const std::optional<Bytes> budget = BudgetOfRatio(reference, ratio);
    if (!budget)
      throw InputError("remat sweep: ratio " + std::to_string(ratio) + " of the no-remat peak (" +
                       std::to_string(reference) + " B) is not a budget roam can plan");
    budgets.push_back(*budget);
  }
  // One greedy descent for every budget (it needs them in decreasing order) and one
  // evaluation of the checkpoint's segmentations, instead of one per budget.
  std::vector<size_t> by_budget(budgets.size());
  for (size_t i = 0; i < by_budget.size(); ++i) by_budget[i] = i;
  std::stable_sort(by_budget.begin(), by_budget.end(),
                   [&](size_t a, size_t b) { return budgets[a] > budgets[b]; });
  const Preset preset = PresetOf(params);
  auto builds = [&](std::string_view name) {
    return std::find(preset.build.begin(), preset.build.end(), name) != preset.build.end();
  };
  const bool greedy = builds("greedy"), checkpoint = builds("checkpoint");
  std::vector<MethodResult> descent(budgets.size());
  std::vector<MethodResult> checkpoints;
  if (greedy) {
    std::vector<Bytes> sorted;
    for (size_t i : by_budget) sorted.push_back(budgets[i]);
    std::vector<MethodResult> results = detail::GreedyDescent(
        graph, ctx.start, sorted, params, detail::GreedyEvaluation::kIncremental, &ctx.deadline);
    for (size_t j = 0; j < by_budget.size(); ++j) descent[by_budget[j]] = std::move(results[j]);
  }
  if (checkpoint)
    checkpoints = detail::CheckpointOptions(graph, ctx.start, params, &ctx.Partition());
  const double shared_seconds = SecondsSince(started);
  std::vector<SweepPoint> points;
  for (size_t i = 0; i < ratios.size(); ++i) {
    SweepPoint p;
    p.ratio = ratios[i];
    p.budget = budgets[i];
    Schedule greedy_state;  // the fit loop's retries continue from this point's schedule
    RematResult r = Plan(ctx, p.budget, params, greedy_state,
                         {greedy ? &descent[i] : nullptr, checkpoint ? &checkpoints : nullptr});
    p.peak = r.plan.summary.actual_peak;
    p.compute_overhead = r.compute_overhead;
    p.feasible = r.feasible;
    p.method = r.method;
    p.lower_bound = r.lower_bound;
    p.seconds = r.seconds + (i == 0 ? shared_seconds : 0.0);
    p.plan_ratio = p.ratio;
    points.push_back(p);
    if (!p.feasible) break;
  }
  TakeCheaperPlansFromBelow(points);
  return points;
}

void TakeCheaperPlansFromBelow(std::vector<SweepPoint>& points) {
  std::vector<size_t> by_budget(points.size());
  for (size_t i = 0; i < by_budget.size(); ++i) by_budget[i] = i;
  std::stable_sort(by_budget.begin(), by_budget.end(),
                   [&](size_t a, size_t b) { return points[a].budget < points[b].budget; });
  // Points of one budget are compared with each other too: the cheapest of them is taken.
  std::optional<SweepPoint> cheapest;  // of the budgets so far
  for (size_t j = 0; j < by_budget.size();) {
    size_t end = j;  // [j, end): one budget
    while (end < by_budget.size() && points[by_budget[end]].budget == points[by_budget[j]].budget)
      ++end;
    for (size_t k = j; k < end; ++k) {
      const SweepPoint& p = points[by_budget[k]];
      if (p.feasible && (!cheapest || p.compute_overhead < cheapest->compute_overhead))
        cheapest = p;
    }
    for (size_t k = j; k < end; ++k) {
      SweepPoint& p = points[by_budget[k]];
      if (!cheapest || (p.feasible && p.compute_overhead <= cheapest->compute_overhead)) continue;
      p.peak = cheapest->peak;
      p.compute_overhead = cheapest->compute_overhead;
      p.feasible = true;
      p.method = cheapest->method;
      p.plan_ratio = cheapest->plan_ratio;
    }
    j = end;
  }
}

}  // namespace roam::remat
