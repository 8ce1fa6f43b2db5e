// Whole-graph MODeL mode: the plan it returns is always valid, and each part says truthfully
// whether it is optimal, time-limited or the heuristic it started from.
#include "optimizer/whole_graph.h"

#include <gtest/gtest.h>

#include <random>

#include "baseline/orders.h"
#include "config/config.h"
#include "core/plan.h"
#include "gen/generate.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"

namespace roam::opt {
namespace {

std::string CheckedPlan(const Graph& graph, const MemoryModel& model, const WholeGraphResult& r) {
  Plan plan = AssemblePlan(graph, model, r.order, r.offsets, 0.0);
  return ValidatePlan(graph, plan);
}

TEST(WholeGraph, WithTimeToSpareBothPartsAreOptimalAndTheOrderMatchesBruteForce) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 12; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 3 + trial % 6;
    const Graph graph = testing::RandomGraph(rng, options);
    const MemoryModel model = BuildMemoryModel(graph);
    const std::vector<OpId> warm = ScheduleOrder("program", graph, model);
    WholeGraphParams params;
    params.time_limit_s = 30;
    const WholeGraphResult r = OptimizeWholeGraph(graph, model, warm, params);
    ASSERT_EQ(CheckedPlan(graph, model, r), "") << "trial " << trial;
    EXPECT_EQ(r.order_part.outcome, Outcome::kOptimal) << "trial " << trial;
    EXPECT_EQ(r.order_part.value, testing::BruteForceMinPeak(graph, model)) << "trial " << trial;
    EXPECT_EQ(r.order_part.value, TheoreticalPeak(graph, model, r.order));
    EXPECT_EQ(r.layout_part.outcome, Outcome::kOptimal) << "trial " << trial;
    // Fixed lifetimes can force a layout above the live peak (dynamic storage allocation),
    // never below it.
    EXPECT_GE(r.layout_part.value, r.order_part.value) << "trial " << trial;
    EXPECT_LE(r.layout_part.value, r.layout_part.warm_start) << "trial " << trial;
  }
}

// A generated training step of several hundred ops cannot be modelled, let alone solved, in a
// few milliseconds: the result has the warm start's peak (floating ops may sit elsewhere), is
// valid, and is reported as the fallback.
TEST(WholeGraph, WithNoTimeTheHeuristicPlanIsReturnedAndSaidToBeOne) {
  const Graph graph = gen::GenerateGraph(
      config::LoadConfig(testing::SourceDir() + "/tests/gen/data/gpt2-tiny.yaml"));
  ASSERT_GT(graph.num_ops(), 200);
  const MemoryModel model = BuildMemoryModel(graph);
  const std::vector<OpId> warm = ScheduleOrder("heuristic", graph, model);
  WholeGraphParams params;
  params.time_limit_s = 0.002;
  const WholeGraphResult r = OptimizeWholeGraph(graph, model, warm, params);
  ASSERT_EQ(CheckedPlan(graph, model, r), "");
  EXPECT_EQ(r.order_part.outcome, Outcome::kHeuristic);
  EXPECT_EQ(r.order_part.value, r.order_part.warm_start);
  EXPECT_EQ(r.order_part.value, TheoreticalPeak(graph, model, warm));
  EXPECT_LE(r.order_part.lower_bound, r.order_part.value);
  EXPECT_LE(r.layout_part.value, r.layout_part.warm_start);
  EXPECT_FALSE(r.order_part.note.empty()) << "the fallback should say why";
}

// Stopped by its work limit (iterations times nonzeros), the order ILP returns the same order
// and bound every time, says it was the work limit, and the plan is still valid.
TEST(WholeGraph, AWorkLimitedOrderIsTheSameEveryTimeAndSaysSo) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 14;
    const Graph graph = testing::RandomGraph(rng, options);
    const MemoryModel model = BuildMemoryModel(graph);
    const std::vector<OpId> warm = ScheduleOrder("program", graph, model);
    WholeGraphParams params;
    params.time_limit_s = 600;  // an outer cap that never binds here
    const WholeGraphResult whole = OptimizeWholeGraph(graph, model, warm, params);
    if (whole.order_part.lp_iterations < 40 || whole.order_part.work_limited) continue;
    ASSERT_GT(whole.order_part.nonzeros, 0);
    params.order.solve.max_lp_work = whole.order_part.lp_iterations / 2 * whole.order_part.nonzeros;
    const WholeGraphResult first = OptimizeWholeGraph(graph, model, warm, params);
    const WholeGraphResult second = OptimizeWholeGraph(graph, model, warm, params);
    EXPECT_TRUE(first.order_part.work_limited);
    EXPECT_EQ(first.order_part.status, ilp::ModelStatus::kFeasibleTimeLimit);
    EXPECT_LT(first.order_part.lp_iterations, whole.order_part.lp_iterations);
    EXPECT_EQ(first.order_part.lp_iterations, second.order_part.lp_iterations);
    EXPECT_EQ(first.order, second.order);
    EXPECT_EQ(first.offsets, second.offsets);
    EXPECT_EQ(first.order_part.lower_bound, second.order_part.lower_bound);
    EXPECT_LE(first.order_part.lower_bound, whole.order_part.value);
    EXPECT_GE(first.order_part.value, whole.order_part.value);
    EXPECT_EQ(CheckedPlan(graph, model, first), "");
    return;
  }
  FAIL() << "no trial needed enough simplex iterations to stop halfway";
}

}  // namespace
}  // namespace roam::opt
