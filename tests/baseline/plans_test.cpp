// End to end: every baseline order combined with every baseline layout yields a valid plan.
#include <gtest/gtest.h>

#include <random>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/io.h"
#include "core/plan.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

void ExpectEveryCombinationValid(const Graph& graph, Bytes alignment, const std::string& what) {
  MemoryModel model = BuildMemoryModel(graph, alignment);
  for (std::string_view order_name : OrderNames()) {
    std::vector<OpId> order = ScheduleOrder(order_name, graph, model);
    auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, order));
    for (std::string_view layout_name : LayoutNames()) {
      std::vector<Bytes> offsets = PlaceBuffers(layout_name, intervals, alignment);
      Plan plan = AssemblePlan(graph, model, order, offsets, 0.0);
      ASSERT_EQ(ValidatePlan(graph, plan), "") << what << ' ' << order_name << '+' << layout_name;
      EXPECT_LE(plan.summary.theoretical_peak, plan.summary.actual_peak)
          << what << ' ' << order_name << '+' << layout_name;
      EXPECT_EQ(plan.summary.theoretical_peak, TheoreticalPeak(graph, model, order));
    }
  }
}

TEST(BaselinePlans, EveryOrderAndLayoutValidatesOnTheGoldenGraph) {
  ExpectEveryCombinationValid(LoadGraph(testing::DataPath("tiny.graph.json")), 512, "tiny");
}

TEST(BaselinePlans, EveryOrderAndLayoutValidatesOnRandomGraphs) {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 150; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 1 + trial % 60;
    options.max_size = trial % 3 == 0 ? 3'000'000 : 5000;  // exercise both allocator pools
    const Bytes alignment = trial % 5 == 0 ? 256 : 512;
    ExpectEveryCombinationValid(testing::RandomGraph(rng, options), alignment,
                                "trial " + std::to_string(trial));
  }
}

}  // namespace
}  // namespace roam
