#include "baseline/best.h"

#include <utility>

#include "baseline/layouts.h"
#include "baseline/orders.h"

namespace roam {

void BestBaseline::Offer(const Graph& graph, const MemoryModel& model, std::string_view order_name,
                         const std::vector<OpId>& order, std::span<const Interval> intervals,
                         double seconds, const std::function<bool()>& stop) {
  const auto key = [](const Plan& x) {
    return std::pair(x.summary.actual_peak, x.summary.theoretical_peak);
  };
  for (const char* layout : {"best-fit", "llfb"}) {
    Plan p = AssemblePlan(graph, model, order, PlaceBuffers(layout, intervals, model.alignment),
                          seconds);
    if (empty() || key(p) < key(plan_)) {
      plan_ = std::move(p);
      order_ = order_name;
      layout_ = layout;
    }
    if (stop && stop()) break;
  }
}

BestBaseline BestBaselinePlan(const Graph& graph, const MemoryModel& model) {
  BestBaseline best;
  for (const char* name : {"program", "lescea", "xla-list", "xla-dfs"}) {
    const std::vector<OpId> order = ScheduleOrder(name, graph, model);
    best.Offer(graph, model, name, order,
               PlannedIntervals(model, ComputeLifetimes(graph, model, order)), 0.0);
  }
  return best;
}

}  // namespace roam
