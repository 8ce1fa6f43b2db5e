// The remat driver: no-remat reference, the methods, the layout of the chosen schedule, the
// validated plan, and the trade-off sweep.
#include "remat/remat.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <stdexcept>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/error.h"
#include "remat/internal.h"

namespace roam::remat {
namespace {

using detail::MethodResult;

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Schedule BaseSchedule(const Graph& graph, const RematParams& params) {
  MemoryModel model = BuildMemoryModel(graph, params.alignment);
  return ScheduleOrder(params.base_order, graph, model);
}

// Of two results for one budget: the one within it at less compute, else the lower peak.
bool Better(const MethodResult& a, const MethodResult& b, Bytes budget) {
  const bool fa = a.peak <= budget, fb = b.peak <= budget;
  if (fa != fb) return fa;
  if (fa) return a.recompute_cost < b.recompute_cost;
  return a.peak < b.peak;
}

// greedy_state: where the greedy starts (empty: from start) and, on return, the schedule it
// ended with, so that a lower budget continues from it (the sweep, the layout retries).
// time_left: seconds the exact method may still take in this call of PlanRemat.
MethodResult RunMethod(const Graph& graph, const Schedule& start, Bytes budget,
                       const RematParams& params, Schedule& greedy_state, double time_left) {
  const std::string& m = params.method;
  auto greedy = [&] {
    MethodResult r =
        detail::Greedy(graph, greedy_state.empty() ? start : greedy_state, budget, params);
    greedy_state = r.schedule;
    return r;
  };
  // The exact method on graphs up to ilp_max_ops, warm-started from warm; above, warm.
  auto exact = [&](MethodResult warm) {
    if (graph.num_ops() > params.ilp_max_ops) return warm;
    return detail::Exact(graph, start, budget, params, warm, std::max(0.0, time_left));
  };
  if (m == "greedy") return greedy();
  if (m == "checkpoint") return detail::Checkpoint(graph, start, budget, params);
  if (m == "ilp") return exact(greedy());
  // "best"
  MethodResult best = greedy();
  MethodResult checkpoint = detail::Checkpoint(graph, start, budget, params);
  if (Better(checkpoint, best, budget)) best = std::move(checkpoint);
  return exact(std::move(best));
}

}  // namespace

std::span<const std::string_view> MethodNames() {
  static constexpr std::array<std::string_view, 4> kNames = {"best", "greedy", "checkpoint", "ilp"};
  return kNames;
}

Bytes NoRematPeak(const Graph& graph, const RematParams& params) {
  MemoryModel model = BuildMemoryModel(graph, params.alignment);
  return TheoreticalPeak(graph, model, ScheduleOrder(params.base_order, graph, model));
}

namespace {

RematResult Plan(const Graph& graph, Bytes budget, const RematParams& params,
                 Schedule& greedy_state) {
  const auto started = std::chrono::steady_clock::now();
  if (std::find(MethodNames().begin(), MethodNames().end(), params.method) == MethodNames().end())
    throw InputError("unknown remat method \"" + params.method + "\"");
  if (params.alignment <= 0) throw InputError("alignment must be positive");
  RematResult result;
  result.budget = budget;
  const Schedule start = BaseSchedule(graph, params);
  {
    MemoryModel model = BuildMemoryModel(graph, params.alignment);
    result.no_remat_peak = TheoreticalPeak(graph, model, start);
  }
  result.original_cost = TotalCost(graph);

  // The method meets a target on the theoretical peak; the layout may need more, so the
  // target is lowered by the excess and the method rerun.
  Bytes target = budget;
  bool have = false;
  Bytes best_actual = std::numeric_limits<Bytes>::max();
  std::vector<Bytes> best_offsets;
  detail::Evaluated best_eval;
  MethodResult best_method;
  for (int attempt = 0; attempt <= params.layout_retries; ++attempt) {
    MethodResult r =
        RunMethod(graph, start, target, params, greedy_state, params.time_limit_s - Since(started));
    detail::Evaluated e = detail::Evaluate(graph, r.schedule, params);
    auto intervals = PlannedIntervals(e.model, e.lifetimes);
    std::vector<Bytes> offsets = PlaceBuffers("best-fit", intervals, params.alignment);
    Bytes actual = LayoutHeight(intervals, offsets);
    if (actual > e.peak) {
      std::vector<Bytes> other = PlaceBuffers("llfb", intervals, params.alignment);
      if (Bytes h = LayoutHeight(intervals, other); h < actual) {
        actual = h;
        offsets = std::move(other);
      }
    }
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
    target -= actual - budget;
  }
  result.feasible = best_actual <= budget;
  result.status = result.feasible ? best_method.status : "infeasible";
  if (result.feasible && best_method.status == "infeasible") result.status = "feasible";
  // What the exact method proved about a budget it could not meet stays visible.
  if (!result.feasible && target == budget &&
      (best_method.status == "infeasible-proven" || best_method.status == "time-limit"))
    result.status = best_method.status;
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

}  // namespace

RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params) {
  Schedule greedy_state;
  return Plan(graph, budget, params, greedy_state);
}

std::vector<SweepPoint> Sweep(const Graph& graph, std::span<const double> ratios,
                              const RematParams& params) {
  const Bytes reference = NoRematPeak(graph, params);
  std::vector<SweepPoint> points;
  Schedule greedy_state;  // each budget continues the greedy where the previous one stopped
  for (double ratio : ratios) {
    SweepPoint p;
    p.ratio = ratio;
    p.budget = static_cast<Bytes>(static_cast<double>(reference) * ratio);
    RematResult r = Plan(graph, p.budget, params, greedy_state);
    p.peak = r.plan.summary.actual_peak;
    p.compute_overhead = r.compute_overhead;
    p.feasible = r.feasible;
    p.method = r.method;
    p.seconds = r.seconds;
    points.push_back(p);
    if (!p.feasible) break;
  }
  return points;
}

}  // namespace roam::remat
