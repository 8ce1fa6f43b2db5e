// roam-plan-v1 reader and the validator on arbitrary bytes, against tests/data/tiny.graph.json.
#include <string>

#include "core/error.h"
#include "core/io.h"
#include "core/plan.h"
#include "fuzz/contract.h"

namespace {
const roam::Graph& TinyGraph() {
  static const roam::Graph graph = roam::LoadGraph(ROAM_FUZZ_PLAN_GRAPH);
  return graph;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  using namespace roam;
  const Graph& graph = TinyGraph();
  Plan plan;
  try {
    plan = ParsePlan(fuzz::Text(data, size), "fuzz.plan.json", graph);
  } catch (const InputError&) {
    return 0;
  }
  // Any plan that reads is judged, never crashes the judge; a valid one survives a round trip.
  if (ValidatePlan(graph, plan).empty()) {
    Plan read = ParsePlan(PlanToJson(graph, plan), "round-trip.plan.json", graph);
    fuzz::Require(read.order == plan.order && read.buffers == plan.buffers, "plan round trip");
    const std::string problem = ValidatePlan(graph, read);
    fuzz::Require(problem.empty(), "read-back plan is valid", problem);
  }
  return 0;
}
