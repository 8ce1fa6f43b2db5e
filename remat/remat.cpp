// The remat driver (docs/remat.md, "Methods"): the fit loop that runs a preset's methods
// (methods.cpp), lays out their schedules and retries at lower targets, best's other start
// orders, and the trade-off sweep. The context they read is built once per plan
// (context.cpp).
#include "remat/remat.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <tuple>

#include "baseline/orders.h"
#include "core/bytes.h"
#include "core/deadline.h"
#include "core/error.h"
#include "layout/best.h"
#include "layout/layout.h"
#include "layout/repack.h"
#include "remat/context.h"
#include "remat/internal.h"
#include "remat/methods.h"

namespace roam::remat {

namespace {

using detail::Call;
using detail::Context;
using detail::Find;
using detail::MethodResult;
using detail::PlanMemo;
using detail::PresetOf;
using detail::RepackLedger;
using detail::RunPreset;
using detail::Shared;
using detail::TimeLeft;

// Offsets of a schedule's buffers and the arena's height: best-fit, then llfb, then the
// layout search where both miss the theoretical peak, and where the arena is still over the
// budget, the search once more with its bottom-left branching in groups of any size, then a
// search for a layout within the budget alone (fit.search_wide, fit.search_at_budget).
std::pair<std::vector<Bytes>, Bytes> LayOut(std::span<const Interval> intervals, Bytes peak,
                                            Bytes budget, const RematParams& params,
                                            const Deadline& deadline) {
  layout::BestLayout best(intervals, params.alignment);
  best.OfferBestFit();
  if (best.height() > peak) best.OfferLlfb();
  auto search = [&](bool wide, std::optional<Bytes> capacity) {
    layout::LayoutParams lp;
    // Each search to the time it has left: the run's deadline is one, whatever runs.
    lp.time_limit_s = std::max(
        0.001, std::min(params.fit.search_time_limit_s, std::min(deadline.Remaining(), 1e8)));
    lp.max_nodes = params.fit.search_max_nodes;
    lp.capacity = capacity;
    if (wide) {
      // The default limits keep these techniques to groups of 1,000 buffers for whole training
      // graphs' sake (docs/layout.md); a rewritten graph of 1,000 ops and its copies is one
      // group just above, and packs to its theoretical peak with them (perf/RESULTS.md).
      lp.search.bottom_left_max_buffers = std::numeric_limits<int>::max();
      lp.search.unallocated_floor_max_buffers = std::numeric_limits<int>::max();
    }
    best.Search(lp);
  };
  // The greedy layouts missed the theoretical peak: the search engine closes the gap that
  // would otherwise cost a retry (a lower target, more recomputation).
  auto searching = [&] { return params.fit.search_max_nodes > 0 && !deadline.Expired(); };
  auto missed = [&] { return best.height() > budget && best.height() > peak && searching(); };
  if (best.height() > peak && searching()) search(false, std::nullopt);
  if (missed() && params.fit.search_wide) search(true, std::nullopt);
  // Minimising, the search spends its nodes on heights below the budget too; asked for the
  // budget alone, it prunes by it and may find a layout there the minimisation did not.
  if (missed() && params.fit.search_at_budget) search(false, budget);
  const Bytes height = best.height();
  return {best.TakeOffsets(), height};
}

// The baseline order of that name on the context's graph (the context's start for base_order).
Schedule OrderSchedule(const Context& ctx, const RematParams& params, const std::string& order) {
  return order == params.base_order ? ctx.start : ScheduleOrder(order, ctx.graph, ctx.model);
}

// Where the chosen schedule's arena misses the budget (fragmentation, or a theoretical peak
// above it): the greedy from base_order and from each of fit.fallback_base_orders, with chains
// of greedy.max_chain and of fit.long_chain ops. Their schedules within target by the
// theoretical peak, cheapest first, distinct, for the caller to lay out.
// Each fallback is one greedy descent and at most two node-bounded layout searches; they stop
// where the plan's deadline has passed.
std::vector<MethodResult> Fallbacks(const Context& ctx, Bytes target, const RematParams& params) {
  std::vector<std::string> orders = {params.base_order};
  for (const std::string& o : params.fit.fallback_base_orders)
    if (std::find(orders.begin(), orders.end(), o) == orders.end()) orders.push_back(o);
  std::vector<int> chains = {params.greedy.max_chain};
  if (params.fit.long_chain > params.greedy.max_chain) chains.push_back(params.fit.long_chain);
  std::vector<MethodResult> found;
  for (const std::string& order : orders) {
    RematParams p = params;
    p.base_order = order;
    const Schedule start = OrderSchedule(ctx, params, order);
    for (int chain : chains) {
      if (ctx.deadline.Expired()) break;
      p.greedy.max_chain = chain;
      MethodResult r = detail::Greedy(ctx.graph, start, target, p,
                                      detail::GreedyEvaluation::kIncremental, &ctx.deadline);
      if (r.peak > target) continue;
      if (std::any_of(found.begin(), found.end(),
                      [&](const MethodResult& f) { return f.schedule == r.schedule; }))
        continue;
      r.method = "greedy";
      r.order = order;
      found.push_back(std::move(r));
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const MethodResult& a, const MethodResult& b) {
    return a.recompute_cost < b.recompute_cost;
  });
  return found;
}

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
  if (std::find(kGreedyScores.begin(), kGreedyScores.end(), params.greedy.score) ==
      kGreedyScores.end())
    throw InputError("unknown greedy score \"" + params.greedy.score + "\" (log, peak, lifetime)");
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

// A schedule laid out: its evaluation, offsets and arena.
struct Laid {
  MethodResult method;
  detail::Evaluated eval;
  std::vector<Bytes> offsets;
  Bytes actual = std::numeric_limits<Bytes>::max();
  Bytes measured = std::numeric_limits<Bytes>::max();  // what the budget bounds: fit.by
  bool repacked = false;                               // offsets from fit.repack
};

// memo (may be null): the plan's layouts, for a schedule laid out again (a fit.alone builder's
// loop retracing best's, a retry that reaches a schedule met before).
Laid LayOutSchedule(const Context& ctx, MethodResult r, Bytes budget, const RematParams& params,
                    PlanMemo* memo) {
  Laid l;
  const PlanMemo::LaidOut* met = nullptr;
  if (memo != nullptr)
    for (const PlanMemo::LaidOut& m : memo->laid_out)
      if (m.ctx == &ctx && m.schedule == r.schedule) met = &m;
  if (met != nullptr) {
    l.eval = met->eval;
    l.offsets = met->offsets;
    l.actual = met->actual;
  } else {
    l.eval = detail::Evaluate(ctx.graph, r.schedule, params);
    auto intervals = PlannedIntervals(l.eval.model, l.eval.lifetimes);
    std::tie(l.offsets, l.actual) = LayOut(intervals, l.eval.peak, budget, params, ctx.deadline);
    if (memo != nullptr) memo->laid_out.push_back({&ctx, r.schedule, l.eval, l.offsets, l.actual});
  }
  l.measured = FitByTheoretical(params) ? l.eval.peak : l.actual;
  l.method = std::move(r);
  return l;
}

// Of two laid-out schedules for budget: the one that fits (by fit.by) at less compute, else
// the lower peak so measured.
bool Better(const Laid& a, const Laid& b, Bytes budget) {
  return detail::BetterPlan(a.measured, a.eval.recompute_cost, b.measured, b.eval.recompute_cost,
                            budget);
}

// The first of fit.reorder_orders whose plain plan (no recomputation) fits the budget, laid
// out; nullopt where none does.
std::optional<Laid> WithoutRecomputation(const Context& ctx, Bytes budget,
                                         const RematParams& params) {
  for (const std::string& order : params.fit.reorder_orders) {
    if (ctx.deadline.Expired()) break;
    MethodResult r;
    r.method = "reorder";
    r.order = order;
    r.status = Status::kOptimal;  // no recomputation: nothing is cheaper
    r.schedule = OrderSchedule(ctx, params, order);
    r.peak = TheoreticalPeak(ctx.graph, ctx.model, r.schedule);
    if (r.peak > budget) continue;
    Laid l = LayOutSchedule(ctx, std::move(r), budget, params, nullptr);
    if (l.measured <= budget) return l;
  }
  return std::nullopt;
}

// A schedule within the budget by its theoretical peak whose arena missed it: repacking its
// layout (fit.repack) may fit it.
bool RepackMay(const Laid& l, Bytes budget, const RematParams& params) {
  return params.fit.repack.max_subproblems > 0 && l.measured > budget && l.eval.peak <= budget;
}

// fit.repack: the schedules the fit loop laid out above the budget, cheapest first, while
// cheaper than the plan (or while the plan misses too): the first whose repacked layout fits
// becomes the plan. After the loop, so that its retries and their targets, and every plan it
// finds, stay what they were; repacking only adds cheaper fits.
// Each layout's windows come out of the plan's allowance, so the plan's work is bounded however
// many misses its fit loops leave; a layout the plan repacked before takes that outcome again.
void RepackMisses(const Context& ctx, Bytes budget, const RematParams& params,
                  std::vector<Laid>& misses, Laid& best, RepackLedger& ledger) {
  std::stable_sort(misses.begin(), misses.end(), [](const Laid& a, const Laid& b) {
    return a.eval.recompute_cost < b.eval.recompute_cost;
  });
  for (Laid& l : misses) {
    if (ctx.deadline.Expired()) break;
    if (best.measured <= budget && l.eval.recompute_cost >= best.eval.recompute_cost) break;
    std::vector<Interval> intervals = PlannedIntervals(l.eval.model, l.eval.lifetimes);
    auto same = [&](const RepackLedger::Done& d) {
      return d.offsets == l.offsets && d.intervals == intervals;
    };
    auto done = std::find_if(ledger.done.begin(), ledger.done.end(), same);
    if (done == ledger.done.end()) {
      if (ledger.left <= 0) break;
      layout::RepackParams repack = params.fit.repack;
      repack.max_subproblems = std::min(repack.max_subproblems, ledger.left);
      layout::RepackResult r =
          layout::Repack(intervals, params.alignment, l.offsets, budget, repack, ctx.deadline);
      ledger.left -= r.subproblems;
      done = ledger.done.insert(ledger.done.end(),
                                {std::move(intervals), l.offsets, std::move(r.offsets), r.height});
    }
    if (done->height > budget) continue;
    l.offsets = done->repacked;
    l.actual = l.measured = done->height;
    l.repacked = true;
    best = std::move(l);
    break;
  }
}

// fit.refine_retries: a retry at target `fitted` laid out within the budget after one at
// `missed` did not. A schedule's arena is not monotone in its target and the retries step down
// by half the excess, so the targets between are bisected, each run from the greedy's schedule
// at the miss, and best becomes the cheapest fit (Better).
void RefineTarget(const Context& ctx, Bytes budget, const RematParams& params, const Preset& preset,
                  bool is_best, const Shared& shared, Bytes missed, Bytes fitted,
                  const Schedule& greedy_at_miss, Laid& best, std::vector<Laid>& misses) {
  for (int k = 0; k < params.fit.refine_retries && missed - fitted > 1 && !ctx.deadline.Expired();
       ++k) {
    const Bytes mid = fitted + (missed - fitted) / 2;
    Schedule greedy_state = greedy_at_miss;
    Call call{ctx, params, greedy_state, TimeLeft(ctx), shared, !is_best, budget};
    Laid l = LayOutSchedule(ctx, RunPreset(call, preset, mid), budget, params, shared.memo);
    (l.measured <= budget ? fitted : missed) = mid;
    if (RepackMay(l, budget, params)) misses.push_back(l);
    if (Better(l, best, budget)) best = std::move(l);
  }
}

// The fit loop for one preset: the methods meet a target on the theoretical peak; the layout
// may need more, so the target is lowered by the excess and the methods rerun (fit.retries);
// where every attempt missed, `best` tries its fallbacks. The plan's status and report.
RematResult Fit(const Context& ctx, Bytes budget, const RematParams& params, Schedule& greedy_state,
                Shared shared) {
  if (shared.memo == nullptr) throw std::logic_error("remat: a fit loop outside a plan's memo");
  const auto started = std::chrono::steady_clock::now();
  const Preset preset = PresetOf(params);
  const bool is_best = params.method == "best";
  RematResult result;
  result.budget = budget;
  result.no_remat_peak = ctx.no_remat_peak;
  result.original_cost = ctx.original_cost;
  result.peak_lower_bound = ctx.peak_lower_bound;

  Bytes target = budget;
  // best: no recomputation where an order alone fits; a method asked for by name runs as
  // itself, for comparisons.
  std::optional<Laid> best;
  if (is_best) best = WithoutRecomputation(ctx, budget, params);
  const bool reordered = best.has_value();
  // The lowest target that missed and the greedy's schedule after it, for fit.refine_retries.
  std::optional<Bytes> missed_at;
  Schedule greedy_at_miss;
  std::vector<Laid> misses;  // for fit.repack
  for (int attempt = 0; !reordered && attempt <= params.fit.retries; ++attempt) {
    Call call{ctx, params, greedy_state, TimeLeft(ctx), shared, !is_best, budget};
    MethodResult r = RunPreset(call, preset, target);
    shared.greedy = nullptr;
    const Bytes reached = r.peak;
    Laid l = LayOutSchedule(ctx, std::move(r), budget, params, shared.memo);
    const Bytes theoretical = l.eval.peak, actual = l.actual, measured = l.measured;
    if (RepackMay(l, budget, params)) misses.push_back(l);
    if (!best || Better(l, *best, budget)) best = std::move(l);
    if (measured <= budget || reached > target || ctx.deadline.Expired()) break;
    missed_at = target;
    greedy_at_miss = greedy_state;
    // Below the peak this schedule already reached: a schedule that met the old target with
    // room to spare would otherwise come back unchanged.
    const auto step =
        static_cast<Bytes>(params.fit.retry_step * static_cast<double>(actual - budget));
    target = std::min(target, theoretical) - std::max<Bytes>(1, step);
  }
  // The loop ends at the first fit, so best fits only where the last attempt did.
  if (missed_at && best->measured <= budget)
    RefineTarget(ctx, budget, params, preset, is_best, shared, *missed_at, target, greedy_at_miss,
                 *best, misses);
  RepackMisses(ctx, budget, params, misses, *best, shared.memo->repack);
  if (best->measured > budget && is_best && !params.fit.fallback_base_orders.empty() &&
      budget >= ctx.peak_lower_bound && !ctx.deadline.Expired()) {
    // Every attempt missed by the arena: the first fallback whose arena fits is the plan.
    // After the retries, so that a plan they find is never replaced (nor its time raised).
    for (MethodResult& f : Fallbacks(ctx, budget, params)) {
      if (ctx.deadline.Expired()) break;
      Laid l = LayOutSchedule(ctx, std::move(f), budget, params, shared.memo);
      if (l.measured > budget) continue;
      best = std::move(l);
      target = budget;
      break;
    }
  }
  const MethodResult& m = best->method;
  result.fit_by = params.fit.by;
  result.feasible = best->measured <= budget;
  result.status = result.feasible ? m.status : Status::kInfeasible;
  if (result.feasible && m.status == Status::kInfeasible) result.status = Status::kFeasible;
  // What the exact method proved about a budget it could not meet stays visible.
  if (!result.feasible && target == budget &&
      (m.status == Status::kInfeasibleProven || m.status == Status::kTimeLimit))
    result.status = m.status;
  result.timed_out = ctx.deadline.Expired();
  if (!result.feasible && result.timed_out && result.status == Status::kInfeasible)
    result.status = Status::kTimeLimit;
  if (!result.feasible && budget < result.peak_lower_bound)
    result.status = Status::kInfeasibleProven;
  result.solver = m.solver;
  result.order_lower_bound = result.original_cost > 0 ? m.lower_bound / result.original_cost : 0.0;
  result.method = m.method;
  result.repacked = best->repacked;
  result.start_order = m.order.empty() ? params.base_order : m.order;
  result.recompute_cost = best->eval.recompute_cost;
  result.compute_overhead =
      result.original_cost > 0 ? result.recompute_cost / result.original_cost : 0.0;
  result.schedule = m.schedule;
  result.seconds = SecondsSince(started);
  Rewritten& rw = best->eval.rewritten;
  result.plan = AssemblePlan(rw.graph, best->eval.model, rw.order, best->offsets, result.seconds);
  if (std::string problem = ValidatePlan(rw.graph, result.plan); !problem.empty())
    throw std::logic_error("remat produced an invalid plan: " + problem);
  if (std::string problem = CheckFaithful(rw.graph, &ctx.graph); !problem.empty())
    throw std::logic_error("remat produced an unfaithful rewrite: " + problem);
  result.rewritten = std::move(rw);
  return result;
}

// The peak a result's budget bounds (fit.by).
Bytes Reached(const RematResult& r) {
  return r.fit_by == "theoretical" ? r.plan.summary.theoretical_peak : r.plan.summary.actual_peak;
}

// Of two plans for one budget: the one that fits at less compute, else the lower peak.
bool BetterPlan(const RematResult& a, const RematResult& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.feasible) return a.recompute_cost < b.recompute_cost - 1e-9;
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

// `best` picks its schedule by the theoretical peak; when the layout of the pick misses the
// budget, the retries lower the target for all builders at once, which can end above the
// budget, or dearer, where one builder's own retries fit (the targets they reach differ). So
// where best ends infeasible, repacked, or on the schedule of a builder of fit.alone, that builder
// is planned alone too and kept when it does better: best is never dearer than a pick of it.
RematResult PlanPreset(const Context& ctx, Bytes budget, const RematParams& params,
                       Schedule& greedy_state, const Shared& shared) {
  RematResult result = Fit(ctx, budget, params, greedy_state, shared);
  if (params.method != "best") return result;
  for (const std::string& name : params.fit.alone) {
    if (ctx.deadline.Expired()) break;
    // A repacked plan is a miss of best's retries rescued after them; the builder's own retries
    // reach other targets, whose misses may repack at less compute.
    if (result.feasible && result.method != name && !result.repacked) continue;
    RematParams alone = params;
    alone.method = name;
    Schedule unused;
    Shared plan_only;  // nothing a sweep shares: the builder runs as if named
    plan_only.memo = shared.memo;
    KeepBetter(result, Fit(ctx, budget, alone, unused, plan_only));
  }
  return result;
}

// `best` from each order of start_orders whose no-remat peak is below the base order's, in a
// context of its own, keeping the better plan: recomputing from a lower order has less to
// remove. What the base order's plan shares (the sweep's greedy descent, the checkpoint's
// schedules) is of the base order; the compute bound is of the budget and is shared. Where the
// plan recomputes nothing or meets the bound, nothing is cheaper and no other start runs.
RematResult FromLowerStarts(const Context& ctx, Bytes budget, const RematParams& params,
                            const Shared& shared, RematResult result) {
  if (params.method != "best") return result;
  for (const Context::Start& start : ctx.LowerStarts(params)) {
    if (ctx.deadline.Expired()) break;
    if (result.feasible &&
        (result.recompute_cost <= 0 || result.recompute_cost <= shared.cost_bound))
      break;
    Shared bound_only = shared;
    bound_only.greedy = nullptr;  // the base order's
    bound_only.checkpoint = nullptr;
    Schedule greedy_state;
    RematResult r = PlanPreset(*start.context, budget, start.params, greedy_state, bound_only);
    r.no_remat_peak = result.no_remat_peak;  // the reference stays the base order's
    KeepBetter(result, std::move(r));
  }
  return result;
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
  if (params.overhead_bound.cuts <= 0)
    return spent(FromLowerStarts(ctx, budget, params, shared,
                                 PlanPreset(ctx, budget, params, greedy_state, shared)));
  const auto started = std::chrono::steady_clock::now();
  RematParams capped = params;
  capped.overhead_bound.time_limit_s =
      std::min(params.overhead_bound.time_limit_s, std::max(0.001, TimeLeft(ctx)));
  const OverheadBound bound = OverheadLowerBound(ctx.graph, budget, capped);
  const double bound_seconds = SecondsSince(started);
  shared.bound = &bound;
  shared.bound_budget = budget;
  if (!bound.infeasible) shared.cost_bound = bound.overhead * ctx.original_cost * (1 + 2e-6);
  RematResult result = PlanPreset(ctx, budget, params, greedy_state, shared);
  result = FromLowerStarts(ctx, budget, params, shared, std::move(result));
  result.seconds += bound_seconds;
  if (bound.infeasible && result.feasible)
    throw std::logic_error("remat: a plan fits a budget the compute lower bound rules out");
  if (bound.infeasible) result.status = Status::kInfeasibleProven;
  result.lower_bound = bound.overhead;
  if (result.feasible && result.compute_overhead <= result.lower_bound * (1 + 2e-6))
    result.status = Status::kOptimal;
  result.plan.summary.seconds = result.seconds;
  return spent(std::move(result));
}

}  // namespace

MethodResult detail::Improve(std::string_view name, const Context& ctx, const RematParams& params,
                             const MethodResult& incumbent, Bytes target, double time_limit_s) {
  Schedule unused;
  const Shared none;
  Call call{ctx, params, unused, time_limit_s, none, true, target};
  const detail::Improver improve = Find(name).improve;
  if (improve == nullptr) throw InputError("\"" + std::string(name) + "\" is no improver");
  return improve(call, incumbent, target);
}

std::span<const std::string_view> MethodNames() { return kMethodNames; }

Bytes NoRematPeak(const Graph& graph, const RematParams& params) {
  MemoryModel model = BuildMemoryModel(graph, params.alignment);
  return TheoreticalPeak(graph, model, ScheduleOrder(params.base_order, graph, model));
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
    points.push_back(p);
    if (!p.feasible) break;
  }
  return points;
}

}  // namespace roam::remat
