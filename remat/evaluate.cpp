// The evaluation every method shares: a schedule's rewritten graph, memory model, lifetimes,
// profile and recomputed cost (the reference the greedy's incremental state is held to), the
// op costs, and the base schedule the methods start from.
#include <stdexcept>

#include "baseline/orders.h"
#include "core/error.h"
#include "core/types.h"
#include "partition/partition.h"
#include "remat/internal.h"

namespace roam::remat::detail {
namespace {
// The partition's placement of that name (its ToString, the names `roam partition` takes).
UpdatePlacement PlacementNamed(std::string_view name) {
  for (UpdatePlacement p : {UpdatePlacement::kWhenReady, UpdatePlacement::kScheduled,
                            UpdatePlacement::kSplit, UpdatePlacement::kAtEnd})
    if (ToString(p) == name) return p;
  throw InputError("unknown remat update placement \"" + std::string(name) +
                   "\" (when-ready, scheduled, split, at-end)");
}
}  // namespace

Schedule StartOrder(std::string_view name, const Graph& graph, const MemoryModel& model,
                    const RematParams& params) {
  Schedule order = ScheduleOrder(name, graph, model);
  if (params.update_placements.empty()) return order;
  const Bytes peak = TheoreticalPeak(graph, model, order);
  for (const std::string& placement : params.update_placements) {
    PartitionParams placed;
    placed.update_placement = PlacementNamed(placement);
    SubgraphTree tree;
    try {
      tree = PartitionGraph(graph, model, order, placed);
    } catch (const std::invalid_argument&) {
      return order;  // no partition of this order
    }
    if (tree.branches.empty()) return order;
    if (TheoreticalPeak(graph, model, tree.order) <= peak) return std::move(tree.order);
  }
  return order;
}

Schedule BaseSchedule(const Graph& graph, const RematParams& params) {
  MemoryModel model = BuildMemoryModel(graph, params.alignment);
  return StartOrder(params.base_order, graph, model, params);
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
