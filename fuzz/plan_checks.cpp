#include "fuzz/plan_checks.h"

#include <string>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/error.h"
#include "core/io.h"
#include "core/memory_model.h"
#include "core/plan.h"
#include "fuzz/contract.h"

namespace roam::fuzz {

void CheckPlansOf(const Graph& graph, size_t orders_limit, std::span<const Bytes> alignments) {
  // A graph the loader accepted reads back from its own file.
  const std::string file = GraphToJson(graph);
  Graph again = ParseGraph(file, "round-trip.graph.json");
  Require(again.num_ops() == graph.num_ops() && again.num_tensors() == graph.num_tensors(),
          "graph round trip");
  for (Bytes alignment : alignments) {
    MemoryModel model;
    try {
      model = BuildMemoryModel(graph, alignment);
    } catch (const InputError&) {
      continue;  // aligned sizes total more than kMaxBytes: refused, as documented
    }
    size_t tried = 0;
    for (std::string_view order_name : OrderNames()) {
      if (tried++ == orders_limit) break;
      std::vector<OpId> order = ScheduleOrder(order_name, graph, model);
      auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, order));
      for (std::string_view layout : LayoutNames()) {
        std::vector<Bytes> offsets;
        try {
          offsets = PlaceBuffers(layout, intervals, alignment);
        } catch (const InputError&) {
          continue;  // the pytorch simulation's segments would end beyond kMaxBytes: refused
        }
        Plan plan = AssemblePlan(graph, model, order, offsets, 0.0);
        const std::string where = std::string(order_name) + " + " + std::string(layout) +
                                  ", alignment " + std::to_string(alignment);
        const std::string problem = ValidatePlan(graph, plan);
        Require(problem.empty(), "baseline plan is valid", where + ": " + problem);
        Plan read = ParsePlan(PlanToJson(graph, plan), "round-trip.plan.json", graph);
        Require(read.order == plan.order && read.buffers == plan.buffers, "plan round trip", where);
        Require(ValidatePlan(graph, read).empty(), "read-back plan is valid", where);
      }
    }
  }
}

}  // namespace roam::fuzz
