// The remat driver: no-remat reference, the methods, the layout of the chosen schedule, the
// validated plan, and the trade-off sweep.
#include "remat/remat.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <optional>
#include <stdexcept>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/error.h"
#include "layout/layout.h"
#include "remat/internal.h"

namespace roam::remat {

namespace {

using detail::BaseSchedule;
using detail::MethodResult;

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Of two results for one budget: the one within it at less compute, else the lower peak.
bool Better(const MethodResult& a, const MethodResult& b, Bytes budget) {
  const bool fa = a.peak <= budget, fb = b.peak <= budget;
  if (fa != fb) return fa;
  if (fa) return a.recompute_cost < b.recompute_cost;
  return a.peak < b.peak;
}

// Work a sweep shares between its budgets: the greedy descent's result for this budget (for
// the first attempt only: a layout retry lowers the target) and the checkpoint's schedules.
struct Shared {
  const MethodResult* greedy = nullptr;
  const std::vector<MethodResult>* checkpoint = nullptr;
  // The compute bound at bound_budget, computed once for the witness phase and the report.
  const OverheadBound* bound = nullptr;
  Bytes bound_budget = -1;
};

// greedy_state: where the greedy starts (empty: from start) and, on return, the schedule it
// ended with, so that a lower budget continues from it (the layout retries).
// time_left: seconds the exact method may still take in this call of PlanRemat.
MethodResult RunMethod(const Graph& graph, const Schedule& start, Bytes budget,
                       const RematParams& params, Schedule& greedy_state, double time_left,
                       const Shared& shared = {}) {
  const std::string& m = params.method;
  auto greedy = [&] {
    MethodResult r =
        shared.greedy != nullptr
            ? *shared.greedy
            : detail::Greedy(graph, greedy_state.empty() ? start : greedy_state, budget, params);
    greedy_state = r.schedule;
    return r;
  };
  auto checkpoint = [&] {
    return shared.checkpoint != nullptr ? detail::PickCheckpoint(*shared.checkpoint, budget)
                                        : detail::Checkpoint(graph, start, budget, params);
  };
  // The exact method on graphs up to ilp_max_ops, warm-started from warm; above, warm.
  auto exact = [&](MethodResult warm) {
    // Below the peak lower bound nothing fits: the MILP would spend its time for nothing.
    if (graph.num_ops() > params.ilp_max_ops || budget < PeakLowerBound(graph, params)) return warm;
    return detail::Exact(graph, start, budget, params, warm, std::max(0.0, time_left));
  };
  auto lookahead = [&] {
    return detail::Lookahead(graph, start, budget, params, std::max(0.0, time_left));
  };
  if (m == "greedy") return greedy();
  if (m == "checkpoint") return checkpoint();
  if (m == "lookahead") return lookahead();
  auto blocks = [&](const MethodResult& incumbent) {
    return detail::ImproveByBlocks(graph, start, incumbent, budget, params,
                                   std::max(0.0, time_left));
  };
  if (m == "ilp") return exact(greedy());
  if (m == "blocks") return blocks(greedy());
  auto split = [&](const MethodResult& incumbent) {
    return detail::SplitBudgetByBlocks(graph, start, incumbent, budget, params,
                                       std::max(0.0, time_left));
  };
  if (m == "blocks-dp") return split(greedy());
  auto witness = [&](const MethodResult& incumbent) {
    if (shared.bound != nullptr && shared.bound_budget == budget)
      return detail::FollowWitness(graph, start, incumbent, budget, params, *shared.bound);
    RematParams p = params;
    p.overhead_bound_cuts = std::max(1, p.overhead_bound_cuts);
    return detail::FollowWitness(graph, start, incumbent, budget, params,
                                 OverheadLowerBound(graph, budget, p));
  };
  if (m == "witness") return witness(greedy());
  // "best"
  MethodResult best = greedy();
  for (MethodResult other : {checkpoint(), lookahead()})
    if (Better(other, best, budget)) best = std::move(other);
  if (best.peak <= budget && params.blocks_rounds > 0) best = blocks(best);
  if (best.peak <= budget && params.blocks_dp_in_best) best = split(best);
  if (params.witness_in_best && params.overhead_bound_cuts > 0) best = witness(best);
  return exact(std::move(best));
}

}  // namespace

std::span<const std::string_view> MethodNames() { return kMethodNames; }

Bytes NoRematPeak(const Graph& graph, const RematParams& params) {
  MemoryModel model = BuildMemoryModel(graph, params.alignment);
  return TheoreticalPeak(graph, model, ScheduleOrder(params.base_order, graph, model));
}

namespace {

// Offsets of a schedule's buffers and the arena's height: best-fit, then llfb, then the
// layout search where both miss the theoretical peak, and where the arena is still over the
// budget, the search once more with its bottom-left branching in groups of any size.
std::pair<std::vector<Bytes>, Bytes> LayOut(std::span<const Interval> intervals, Bytes peak,
                                            Bytes budget, const RematParams& params) {
  std::vector<Bytes> offsets = PlaceBuffers("best-fit", intervals, params.alignment);
  Bytes actual = LayoutHeight(intervals, offsets);
  if (actual > peak) {
    std::vector<Bytes> other = PlaceBuffers("llfb", intervals, params.alignment);
    if (Bytes h = LayoutHeight(intervals, other); h < actual) {
      actual = h;
      offsets = std::move(other);
    }
  }
  auto search = [&](bool wide) {
    layout::LayoutParams lp;
    lp.time_limit_s = params.layout_search_time_limit_s;
    lp.max_nodes = params.layout_search_max_nodes;
    if (wide) {
      // The default limits keep these techniques to groups of 1,000 buffers for whole training
      // graphs' sake (docs/layout.md); a rewritten graph of 1,000 ops and its copies is one
      // group just above, and packs to its theoretical peak with them (perf/RESULTS.md).
      lp.search.bottom_left_max_buffers = std::numeric_limits<int>::max();
      lp.search.unallocated_floor_max_buffers = std::numeric_limits<int>::max();
    }
    const layout::LayoutResult l =
        layout::SolveLayout(intervals, params.alignment, lp, std::span<const Bytes>(offsets));
    if (l.call == layout::LayoutCall::kOk && l.height < actual) {
      actual = l.height;
      offsets = l.offsets;
    }
  };
  // The greedy layouts missed the theoretical peak: the search engine closes the gap that
  // would otherwise cost a retry (a lower target, more recomputation).
  if (actual > peak && params.layout_search_time_limit_s > 0) search(false);
  if (actual > budget && actual > peak && params.layout_search_time_limit_s > 0 &&
      params.layout_search_wide)
    search(true);
  return {std::move(offsets), actual};
}

// Where the chosen schedule's arena misses the budget (fragmentation, or a theoretical peak
// above it): the greedy from base_order and from each of fallback_base_orders, with chains of
// greedy_max_chain and of greedy_long_chain ops. Their schedules within target by the
// theoretical peak, cheapest first, distinct, for the caller to lay out.
// Not bound by time_limit_s (the exact method may have spent it): each fallback is one greedy
// descent and at most two layout searches of layout_search_time_limit_s.
std::vector<MethodResult> Fallbacks(const Graph& graph, Bytes target, const RematParams& params) {
  std::vector<std::string> orders = {params.base_order};
  for (const std::string& o : params.fallback_base_orders)
    if (std::find(orders.begin(), orders.end(), o) == orders.end()) orders.push_back(o);
  std::vector<int> chains = {params.greedy_max_chain};
  if (params.greedy_long_chain > params.greedy_max_chain)
    chains.push_back(params.greedy_long_chain);
  std::vector<MethodResult> found;
  for (const std::string& order : orders) {
    RematParams p = params;
    p.base_order = order;
    const Schedule start = BaseSchedule(graph, p);
    for (int chain : chains) {
      p.greedy_max_chain = chain;
      MethodResult r = detail::Greedy(graph, start, target, p);
      if (r.peak > target) continue;
      if (std::any_of(found.begin(), found.end(),
                      [&](const MethodResult& f) { return f.schedule == r.schedule; }))
        continue;
      r.method = "greedy";
      found.push_back(std::move(r));
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const MethodResult& a, const MethodResult& b) {
    return a.recompute_cost < b.recompute_cost;
  });
  return found;
}

RematResult PlanOnce(const Graph& graph, Bytes budget, const RematParams& params,
                     Schedule& greedy_state, Shared shared = {}) {
  const auto started = std::chrono::steady_clock::now();
  if (std::find(MethodNames().begin(), MethodNames().end(), params.method) == MethodNames().end())
    throw InputError("unknown remat method \"" + params.method + "\"");
  if (params.alignment <= 0) throw InputError("alignment must be positive");
  if (std::find(kGreedyScores.begin(), kGreedyScores.end(), params.greedy_score) ==
      kGreedyScores.end())
    throw InputError("unknown greedy score \"" + params.greedy_score + "\" (log, peak, lifetime)");
  if (std::find(kCheckpointCuts.begin(), kCheckpointCuts.end(), params.checkpoint_cuts) ==
      kCheckpointCuts.end())
    throw InputError("unknown checkpoint cut rule \"" + params.checkpoint_cuts +
                     "\" (both, insensitive, ops)");
  for (const std::string& order : params.fallback_base_orders)
    if (std::find(OrderNames().begin(), OrderNames().end(), order) == OrderNames().end())
      throw InputError("unknown fallback base order \"" + order + "\"");
  RematResult result;
  result.budget = budget;
  const Schedule start = BaseSchedule(graph, params);
  {
    MemoryModel model = BuildMemoryModel(graph, params.alignment);
    result.no_remat_peak = TheoreticalPeak(graph, model, start);
  }
  result.original_cost = TotalCost(graph);
  result.peak_lower_bound = PeakLowerBound(graph, params);

  // The method meets a target on the theoretical peak; the layout may need more, so the
  // target is lowered by the excess and the method rerun.
  Bytes target = budget;
  bool have = false;
  Bytes best_actual = std::numeric_limits<Bytes>::max();
  std::vector<Bytes> best_offsets;
  detail::Evaluated best_eval;
  MethodResult best_method;
  for (int attempt = 0; attempt <= params.layout_retries; ++attempt) {
    MethodResult r = RunMethod(graph, start, target, params, greedy_state,
                               params.time_limit_s - Since(started), shared);
    shared.greedy = nullptr;
    detail::Evaluated e = detail::Evaluate(graph, r.schedule, params);
    auto intervals = PlannedIntervals(e.model, e.lifetimes);
    auto [offsets, actual] = LayOut(intervals, e.peak, budget, params);
    const Bytes best_eval_peak = e.peak;
    const bool fits = actual <= budget, best_fits = best_actual <= budget;
    if (!have || (fits && (!best_fits || e.recompute_cost < best_eval.recompute_cost)) ||
        (!fits && !best_fits && actual < best_actual)) {
      have = true;
      best_actual = actual;
      best_offsets = std::move(offsets);
      best_eval = std::move(e);
      best_method = r;
    }
    if (actual <= budget || r.peak > target) break;
    // Below the peak this schedule already reached: a schedule that met the old target with
    // room to spare would otherwise come back unchanged.
    target = std::min(target, best_eval_peak) - (actual - budget);
  }
  if (best_actual > budget && params.method == "best" && !params.fallback_base_orders.empty() &&
      budget >= result.peak_lower_bound) {
    // Every attempt missed by the arena: the first fallback whose arena fits is the plan.
    // After the retries, so that a plan they find is never replaced (nor its time raised).
    for (MethodResult& f : Fallbacks(graph, budget, params)) {
      detail::Evaluated fe = detail::Evaluate(graph, f.schedule, params);
      auto fi = PlannedIntervals(fe.model, fe.lifetimes);
      auto [fo, fa] = LayOut(fi, fe.peak, budget, params);
      if (fa > budget) continue;
      best_actual = fa;
      best_offsets = std::move(fo);
      best_eval = std::move(fe);
      best_method = std::move(f);
      target = budget;
      break;
    }
  }
  result.feasible = best_actual <= budget;
  result.status = result.feasible ? best_method.status : Status::kInfeasible;
  if (result.feasible && best_method.status == Status::kInfeasible)
    result.status = Status::kFeasible;
  // What the exact method proved about a budget it could not meet stays visible.
  if (!result.feasible && target == budget &&
      (best_method.status == Status::kInfeasibleProven || best_method.status == Status::kTimeLimit))
    result.status = best_method.status;
  if (!result.feasible && budget < result.peak_lower_bound)
    result.status = Status::kInfeasibleProven;
  result.solver = best_method.solver;
  result.lower_bound =
      result.original_cost > 0 ? best_method.lower_bound / result.original_cost : 0.0;
  result.method = best_method.method;
  result.recompute_cost = best_eval.recompute_cost;
  result.compute_overhead =
      result.original_cost > 0 ? result.recompute_cost / result.original_cost : 0.0;
  result.schedule = best_method.schedule;
  result.seconds = Since(started);
  result.plan = AssemblePlan(best_eval.rewritten.graph, best_eval.model, best_eval.rewritten.order,
                             best_offsets, result.seconds);
  if (std::string problem = ValidatePlan(best_eval.rewritten.graph, result.plan); !problem.empty())
    throw std::logic_error("remat produced an invalid plan: " + problem);
  if (std::string problem = CheckFaithful(best_eval.rewritten.graph, &graph); !problem.empty())
    throw std::logic_error("remat produced an unfaithful rewrite: " + problem);
  result.rewritten = std::move(best_eval.rewritten);
  return result;
}

// "best" picks its schedule by the theoretical peak; when the layout of the pick misses the
// budget, the retries lower the target for all methods at once, which can end above the
// budget, or dearer, where the lookahead's own retries fit (the targets they reach differ).
// So where best ends infeasible or on the lookahead's schedule, the lookahead alone is planned
// too and kept when it does better: best is never dearer than a lookahead it picked.
RematResult PlanMethods(const Graph& graph, Bytes budget, const RematParams& params,
                        Schedule& greedy_state, Shared shared) {
  RematResult result = PlanOnce(graph, budget, params, greedy_state, shared);
  if (params.method != "best" || (result.feasible && result.method != "lookahead")) return result;
  RematParams alone = params;
  alone.method = "lookahead";
  alone.time_limit_s = std::max(0.0, params.time_limit_s - result.seconds);
  Schedule unused;
  RematResult other = PlanOnce(graph, budget, alone, unused);
  other.seconds += result.seconds;
  const bool better =
      other.feasible != result.feasible
          ? other.feasible
          : (other.feasible ? other.recompute_cost < result.recompute_cost - 1e-9
                            : other.plan.summary.actual_peak < result.plan.summary.actual_peak);
  if (!better) {
    result.seconds = other.seconds;
    return result;
  }
  return other;
}

// The plan, with the compute lower bound of its budget: it holds for every schedule (the
// ilp's, where higher, within its model), and a plan that meets it is proven optimal.
RematResult Plan(const Graph& graph, Bytes budget, const RematParams& params,
                 Schedule& greedy_state, Shared shared = {}) {
  // The witness phase needs the bound first; it is then computed once for both.
  const bool witness =
      (params.method == "best" && params.witness_in_best) || params.method == "witness";
  std::optional<OverheadBound> early;
  double early_seconds = 0;
  if (witness && params.overhead_bound_cuts > 0) {
    const auto started = std::chrono::steady_clock::now();
    early = OverheadLowerBound(graph, budget, params);
    early_seconds = Since(started);
    shared.bound = &*early;
    shared.bound_budget = budget;
  }
  RematResult result = PlanMethods(graph, budget, params, greedy_state, shared);
  if (params.overhead_bound_cuts <= 0) return result;
  const auto started = std::chrono::steady_clock::now();
  const OverheadBound bound = early ? *early : OverheadLowerBound(graph, budget, params);
  result.seconds += early_seconds;
  if (bound.infeasible && result.feasible)
    throw std::logic_error("remat: a plan fits a budget the compute lower bound rules out");
  if (bound.infeasible) result.status = Status::kInfeasibleProven;
  result.lower_bound = std::max(result.lower_bound, bound.overhead);
  if (result.feasible && result.compute_overhead <= result.lower_bound * (1 + 2e-6))
    result.status = Status::kOptimal;
  result.seconds += Since(started);
  result.plan.summary.seconds = result.seconds;
  return result;
}

}  // namespace

RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params) {
  Schedule greedy_state;
  return Plan(graph, budget, params, greedy_state);
}

std::vector<SweepPoint> Sweep(const Graph& graph, std::span<const double> ratios,
                              const RematParams& sweep_params) {
  const auto started = std::chrono::steady_clock::now();
  RematParams params = sweep_params;
  if (params.method == "best" && !params.blocks_in_sweep) {
    params.blocks_rounds = 0;
    params.blocks_dp_in_best = false;
  }
  if (!params.overhead_bound_in_sweep) {
    params.overhead_bound_cuts = 0;
    params.witness_in_best = false;
  }
  const Bytes reference = NoRematPeak(graph, params);
  std::vector<Bytes> budgets;
  for (double ratio : ratios)
    budgets.push_back(static_cast<Bytes>(static_cast<double>(reference) * ratio));
  // One greedy descent for every budget (it needs them in decreasing order) and one
  // evaluation of the checkpoint's segmentations, instead of one per budget.
  std::vector<size_t> by_budget(budgets.size());
  for (size_t i = 0; i < by_budget.size(); ++i) by_budget[i] = i;
  std::stable_sort(by_budget.begin(), by_budget.end(),
                   [&](size_t a, size_t b) { return budgets[a] > budgets[b]; });
  const bool greedy = params.method == "greedy" || params.method == "best";
  const bool checkpoint = params.method == "checkpoint" || params.method == "best";
  std::vector<MethodResult> descent(budgets.size());
  std::vector<MethodResult> checkpoints;
  if (greedy || checkpoint) {
    const Schedule start = BaseSchedule(graph, params);
    if (greedy) {
      std::vector<Bytes> sorted;
      for (size_t i : by_budget) sorted.push_back(budgets[i]);
      std::vector<MethodResult> results = detail::GreedyDescent(graph, start, sorted, params);
      for (size_t j = 0; j < by_budget.size(); ++j) descent[by_budget[j]] = std::move(results[j]);
    }
    if (checkpoint) checkpoints = detail::CheckpointOptions(graph, start, params);
  }
  const double shared_seconds = Since(started);
  std::vector<SweepPoint> points;
  for (size_t i = 0; i < ratios.size(); ++i) {
    SweepPoint p;
    p.ratio = ratios[i];
    p.budget = budgets[i];
    Schedule greedy_state;  // the layout retries continue from this point's schedule
    RematResult r = Plan(graph, p.budget, params, greedy_state,
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
