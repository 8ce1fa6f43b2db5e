#include "baseline/best.h"

#include <utility>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/steps.h"

namespace roam {

void BestBaseline::Offer(const Graph& graph, const MemoryModel& model, std::string_view order_name,
                         const std::vector<OpId>& order, std::span<const Interval> intervals,
                         double seconds, const std::function<bool()>& stop,
                         std::span<const Step> steps) {
  const auto key = [](const Plan& x) {
    return std::pair(x.summary.actual_peak, x.summary.theoretical_peak);
  };
  for (const char* layout : {"best-fit", "llfb"}) {
    Plan p = AssemblePlan(graph, model, order, PlaceBuffers(layout, intervals, model.alignment),
                          seconds, std::vector<Step>(steps.begin(), steps.end()));
    if (empty() || key(p) < key(plan_)) {
      plan_ = std::move(p);
      order_ = order_name;
      layout_ = layout;
    }
    if (stop && stop()) break;
  }
}

BestBaseline BestBaselinePlan(const Graph& graph, const MemoryModel& model, bool multi_stream,
                              int max_concurrency) {
  BestBaseline best;
  const Dependencies deps = multi_stream ? BuildDependencies(graph) : Dependencies{};
  for (const char* name : {"program", "lescea", "xla-list", "xla-dfs"}) {
    SteppedOrder run{ScheduleOrder(name, graph, model), {}};
    if (multi_stream) run = AsapSteps(graph, deps, run.order, max_concurrency);
    best.Offer(graph, model, name, run.order,
               PlannedIntervals(model, ComputeLifetimes(graph, model, run.order, run.steps)), 0.0,
               {}, run.steps);
  }
  return best;
}

}  // namespace roam
