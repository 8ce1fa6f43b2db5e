#include "ilp/whole_graph.h"

#include <algorithm>
#include <chrono>

namespace roam::ilp {
namespace {

PartOutcome Outcome(ModelStatus status, bool model_built, bool from_warm_start) {
  if (status == ModelStatus::kOptimal) return PartOutcome::kOptimal;
  if (!model_built || from_warm_start) return PartOutcome::kHeuristic;
  return PartOutcome::kTimeLimited;
}

}  // namespace

std::string_view ToString(PartOutcome outcome) {
  switch (outcome) {
    case PartOutcome::kOptimal:
      return "optimal";
    case PartOutcome::kTimeLimited:
      return "time-limited";
    case PartOutcome::kHeuristic:
      return "heuristic fallback";
  }
  return "?";
}

WholeGraphResult OptimizeWholeGraph(const Graph& graph, const MemoryModel& model,
                                    std::span<const OpId> warm_order,
                                    const WholeGraphParams& params) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  WholeGraphResult result;

  OrderIlpParams order_params = params.order;
  order_params.solve.time_limit_s =
      std::max(0.0, params.time_limit_s * std::clamp(params.order_share, 0.0, 1.0));
  const Dependencies deps = BuildDependencies(graph);
  OrderIlpResult order =
      SolveOrderIlp(graph, model, deps, WholeGraph(graph), warm_order, order_params);
  result.order = order.order;
  PartReport& op = result.order_part;
  op.status = order.status;
  op.value = order.peak;
  op.lower_bound = order.lower_bound;
  op.warm_start = order.warm_start_peak;
  op.gap = order.gap;
  op.seconds = order.seconds;
  op.outcome = Outcome(order.status, order.model_built, order.from_warm_start);
  op.note = order.note;

  const auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, result.order));
  LayoutIlpParams layout_params = params.layout;
  layout_params.solve.time_limit_s = std::max(0.0, params.time_limit_s - elapsed());
  LayoutIlpResult layout = SolveLayoutIlp(intervals, model.alignment, layout_params);
  result.offsets = layout.offsets;
  PartReport& lp = result.layout_part;
  lp.status = layout.status;
  lp.value = layout.height;
  lp.lower_bound = layout.lower_bound;
  lp.warm_start = layout.warm_start_height;
  lp.gap = layout.gap;
  lp.seconds = layout.seconds;
  lp.outcome = Outcome(layout.status, layout.model_built, layout.from_warm_start);
  lp.note = layout.note;
  return result;
}

}  // namespace roam::ilp
