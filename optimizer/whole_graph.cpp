#include "optimizer/whole_graph.h"

#include <algorithm>
#include <chrono>

namespace roam::opt {
namespace {

PartOutcome Outcome(ilp::ModelStatus status, bool model_built, bool from_warm_start) {
  if (status == ilp::ModelStatus::kOptimal) return PartOutcome::kOptimal;
  if (!model_built || from_warm_start) return PartOutcome::kHeuristic;
  return PartOutcome::kTimeLimited;
}

// The order and layout results share these fields; value and warm_start are the peak or height.
template <typename IlpResult>
PartReport Report(const IlpResult& r, Bytes value, Bytes warm_start) {
  PartReport part;
  part.outcome = Outcome(r.status, r.model_built, r.from_warm_start);
  part.status = r.status;
  part.value = value;
  part.lower_bound = r.lower_bound;
  part.warm_start = warm_start;
  part.gap = r.gap;
  part.seconds = r.seconds;
  part.note = r.note;
  return part;
}

}  // namespace

std::string_view ToString(PartOutcome outcome) {
  switch (outcome) {
    case PartOutcome::kOptimal:
      return "optimal";
    case PartOutcome::kTimeLimited:
      return "time-limited";
    case PartOutcome::kHeuristic:
      return "heuristic";
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

  ilp::OrderIlpParams order_params = params.order;
  order_params.solve.time_limit_s =
      std::max(0.0, params.time_limit_s * std::clamp(params.order_share, 0.0, 1.0));
  const Dependencies deps = BuildDependencies(graph);
  ilp::OrderIlpResult order =
      ilp::SolveOrderIlp(graph, model, deps, WholeGraph(graph, model), warm_order, order_params);
  result.order = order.order;
  result.order_part = Report(order, order.peak, order.warm_start_peak);

  const auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, result.order));
  ilp::LayoutIlpParams layout_params = params.layout;
  layout_params.solve.time_limit_s = std::max(0.0, params.time_limit_s - elapsed());
  ilp::LayoutIlpResult layout = ilp::SolveLayoutIlp(intervals, model.alignment, layout_params);
  result.offsets = layout.offsets;
  result.layout_part = Report(layout, layout.height, layout.warm_start_height);
  return result;
}

}  // namespace roam::opt
