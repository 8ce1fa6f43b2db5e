// The block pass over the subgraph tree (remat/blocks.cpp): never dearer or over budget than
// its input, valid and faithful schedules, the brute-force optimum on a small two-block chain,
// deterministic.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "core/memory_model.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using testing::BruteForceCost;
using testing::Described;

// Two blocks of two layers each (blocks_group_ops = 2; in testing::MlpChain each layer's forward
// op and its backward op are one block of the partition): the greedy's descent without its
// swap search recomputes dearer activations than needed; the pass, re-choosing each block's
// recomputations with the other's fixed, reaches the brute-force optimum.
TEST(BlockPass, ReachesBruteForceOnATwoBlockChainWhereTheDescentStopsDearer) {
  const std::vector<std::vector<double>> all_costs = {
      {9, 8, 6, 4, 3, 4, 1, 7, 9}, {6, 5, 6, 4, 5, 7, 6, 2, 4}, {7, 6, 4, 2, 7, 3, 5, 4, 8}};
  for (const auto& costs : all_costs) {
    const Graph g = testing::MlpChain(4, costs);
    RematParams params;
    params.alignment = 1;
    params.greedy.swap_attempts = 0;
    params.blocks.group_ops = 2;
    const Schedule start = detail::BaseSchedule(g, params);
    const Bytes budget = 500;
    const double optimum = BruteForceCost(g, budget, 3);
    const detail::MethodResult descent = detail::Greedy(g, start, budget, params);
    ASSERT_EQ(descent.status, Status::kFeasible);
    ASSERT_GT(descent.recompute_cost, optimum);
    const detail::MethodResult improved =
        detail::ImproveByBlocks(g, start, descent, budget, params, 0);
    EXPECT_EQ(improved.method, "blocks");
    EXPECT_DOUBLE_EQ(improved.recompute_cost, optimum);
    EXPECT_LE(testing::SchedulePeak(g, improved.schedule), budget);
  }
}

// From any schedule within the budget (the greedy's, or Chen's checkpointing, which the pass
// can improve most), the pass returns a valid, faithful schedule within the budget that is
// never dearer, and the same one every time.
TEST(BlockPass, NeverDearerNorOverBudgetNorUnfaithfulOnRandomTrainingGraphs) {
  std::mt19937_64 rng(11);
  int improved = 0;
  for (int trial = 0; trial < 12; ++trial) {
    testing::TrainingGraphOptions o;
    o.layers = 3 + trial % 5;
    const Graph g = testing::TrainingLikeGraph(rng, o);
    RematParams params;
    params.alignment = 1;
    params.blocks.group_ops = 1 + trial % 4;
    const Schedule start = detail::BaseSchedule(g, params);
    const Bytes no_remat = NoRematPeak(g, params);
    for (double ratio : {0.9, 0.75, 0.6}) {
      const auto budget = static_cast<Bytes>(static_cast<double>(no_remat) * ratio);
      for (const detail::MethodResult& input : {detail::Greedy(g, start, budget, params),
                                                detail::Checkpoint(g, start, budget, params)}) {
        if (input.peak > budget) continue;
        const detail::MethodResult in = Described(g, input.schedule, params);
        const detail::MethodResult out = detail::ImproveByBlocks(g, start, in, budget, params, 0);
        SCOPED_TRACE("trial " + std::to_string(trial) + " ratio " + std::to_string(ratio));
        EXPECT_EQ(CheckSchedule(g, out.schedule), "");
        const Rewritten rw = Rewrite(g, out.schedule);
        EXPECT_EQ(CheckFaithful(rw.graph, &g), "");
        EXPECT_LE(testing::SchedulePeak(g, out.schedule), budget);
        EXPECT_LE(detail::RecomputeCost(g, out.schedule), in.recompute_cost + 1e-9);
        EXPECT_DOUBLE_EQ(out.recompute_cost, detail::RecomputeCost(g, out.schedule));
        const detail::MethodResult again = detail::ImproveByBlocks(g, start, in, budget, params, 0);
        EXPECT_EQ(again.schedule, out.schedule);
        if (out.recompute_cost < in.recompute_cost) ++improved;
      }
    }
  }
  // The property would hold of a pass that never changes anything: it must also improve.
  EXPECT_GT(improved, 0);
}

// An input over the budget comes back unchanged: the pass only improves schedules that fit.
TEST(BlockPass, LeavesAScheduleOverTheBudgetAlone) {
  const Graph g = testing::MlpChain(4, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  RematParams params;
  params.alignment = 1;
  const Schedule start = detail::BaseSchedule(g, params);
  const detail::MethodResult in = Described(g, start, params);
  const detail::MethodResult out = detail::ImproveByBlocks(g, start, in, in.peak - 1, params, 0);
  EXPECT_EQ(out.schedule, in.schedule);
  EXPECT_EQ(out.method, "test");
}

}  // namespace
}  // namespace roam::remat
