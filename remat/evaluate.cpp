// The evaluation every method shares: a schedule's rewritten graph, memory model, lifetimes,
// profile and recomputed cost (the reference the greedy's incremental state is held to), the
// op costs, and the base schedule the methods start from.
#include "baseline/orders.h"
#include "core/types.h"
#include "remat/internal.h"

namespace roam::remat::detail {
Schedule BaseSchedule(const Graph& graph, const RematParams& params) {
  MemoryModel model = BuildMemoryModel(graph, params.alignment);
  return ScheduleOrder(params.base_order, graph, model);
}

double RecomputeCost(const Graph& graph, std::span<const OpId> schedule) {
  std::vector<char> seen(U(graph.num_ops()), 0);
  double cost = 0;
  for (OpId op : schedule) {
    if (seen[U(op)]) cost += OpCost(graph, op);
    seen[U(op)] = 1;
  }
  return cost;
}

Schedule Originals(const Graph& graph, std::span<const OpId> schedule) {
  std::vector<char> seen(U(graph.num_ops()), 0);
  Schedule originals;
  for (OpId op : schedule)
    if (!seen[U(op)]) {
      seen[U(op)] = 1;
      originals.push_back(op);
    }
  return originals;
}

Evaluated Evaluate(const Graph& graph, std::span<const OpId> schedule, const RematParams& params) {
  Evaluated e;
  e.rewritten = Rewrite(graph, schedule, params.rule);
  e.model = BuildMemoryModel(e.rewritten.graph, params.alignment);
  e.lifetimes = ComputeLifetimes(e.rewritten.graph, e.model, e.rewritten.order);
  e.profile = MemoryProfile(e.model, e.lifetimes, static_cast<int>(e.rewritten.order.size()));
  for (size_t s = 0; s < e.profile.size(); ++s)
    if (e.profile[s] > e.peak) {
      e.peak = e.profile[s];
      e.peak_step = static_cast<Step>(s);
    }
  e.recompute_cost = RecomputeCost(graph, schedule);
  return e;
}

std::vector<double> OpCosts(const Graph& graph) {
  std::vector<double> costs(U(graph.num_ops()));
  for (OpId op = 0; op < graph.num_ops(); ++op) costs[U(op)] = OpCost(graph, op);
  return costs;
}

}  // namespace roam::remat::detail
