// The budget split over the chain of blocks (remat/blocks_dp.cpp): the brute-force optimum on
// small chains where the decomposition is exact, from a single run of its programme (so a wrong
// split of the budget fails); never dearer, over budget or unfaithful on random training
// graphs, and deterministic.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using testing::BruteForceCost;
using testing::Described;

// MLP chains of four layers, one group per forward op: the programme's first answer alone (no
// retry, no relaxation, no polish) is the brute-force optimum wherever it improves on its
// input, and the input (the greedy's descent without its swap) is dearer than the optimum on
// some of them. A programme that split the budget wrongly (a group's bytes kept off not
// counted for the deeper groups, or counted where the group's own copies are live) would
// either miss the optimum or return a schedule over the budget.
TEST(BudgetSplit, FirstAnswerIsTheBruteForceOptimumOnSmallChains) {
  std::mt19937_64 rng(5);
  // The first three are chains where the descent stops dearer (tests/remat/blocks_test.cpp).
  std::vector<std::vector<double>> all_costs = {
      {9, 8, 6, 4, 3, 4, 1, 7, 9}, {6, 5, 6, 4, 5, 7, 6, 2, 4}, {7, 6, 4, 2, 7, 3, 5, 4, 8}};
  for (int trial = 0; trial < 12; ++trial) {
    std::vector<double> costs(9);
    for (double& c : costs) c = static_cast<double>(1 + rng() % 9);
    all_costs.push_back(costs);
  }
  int reached = 0, dearer_inputs = 0, trial = 0;
  for (const auto& costs : all_costs) {
    ++trial;
    const Graph g = testing::MlpChain(4, costs);
    RematParams params;
    params.alignment = 1;
    params.greedy.swap_attempts = 0;
    params.blocks_dp.group_ops = 1;
    params.blocks_dp.retries = 1;
    params.blocks_dp.polish = false;
    params.blocks_dp.quantum = 1;
    const Schedule start = detail::BaseSchedule(g, params);
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget : {Bytes{500}, no_remat - 100, no_remat - 200}) {
      const double optimum = BruteForceCost(g, budget, 3);
      const detail::MethodResult descent = detail::Greedy(g, start, budget, params);
      if (descent.peak > budget) continue;
      SCOPED_TRACE("trial " + std::to_string(trial) + " budget " + std::to_string(budget));
      const detail::MethodResult out =
          detail::SplitBudgetByBlocks(g, start, descent, budget, params, 0);
      EXPECT_LE(testing::SchedulePeak(g, out.schedule), budget);
      EXPECT_GE(out.recompute_cost, optimum - 1e-9);
      EXPECT_LE(out.recompute_cost, descent.recompute_cost + 1e-9);
      if (descent.recompute_cost > optimum + 1e-9) {
        ++dearer_inputs;
        EXPECT_EQ(out.method, "blocks-dp");
        EXPECT_DOUBLE_EQ(out.recompute_cost, optimum);
        if (out.recompute_cost <= optimum + 1e-9) ++reached;
      }
    }
  }
  EXPECT_GT(dearer_inputs, 0);
  EXPECT_EQ(reached, dearer_inputs);
}

// From the greedy's and the checkpoint's schedules within budget, the split returns a valid,
// faithful schedule within the budget, never dearer, the same every time; and it improves some;
// so too when it verifies several of the programme's combinations per run.
TEST(BudgetSplit, NeverDearerNorOverBudgetNorUnfaithfulOnRandomTrainingGraphs) {
  for (int candidates : {1, 4}) {
    SCOPED_TRACE("candidates " + std::to_string(candidates));
    std::mt19937_64 rng(11);
    int improved = 0;
    for (int trial = 0; trial < 12; ++trial) {
      testing::TrainingGraphOptions o;
      o.layers = 3 + trial % 5;
      const Graph g = testing::TrainingLikeGraph(rng, o);
      RematParams params;
      params.alignment = 1;
      params.blocks_dp.candidates = candidates;
      params.blocks_dp.group_ops = 1 + trial % 4;
      const Schedule start = detail::BaseSchedule(g, params);
      const Bytes no_remat = NoRematPeak(g, params);
      for (double ratio : {0.9, 0.75, 0.6}) {
        const auto budget = static_cast<Bytes>(static_cast<double>(no_remat) * ratio);
        for (const detail::MethodResult& input : {detail::Greedy(g, start, budget, params),
                                                  detail::Checkpoint(g, start, budget, params)}) {
          if (input.peak > budget) continue;
          const detail::MethodResult in = Described(g, input.schedule, params);
          const detail::MethodResult out =
              detail::SplitBudgetByBlocks(g, start, in, budget, params, 0);
          SCOPED_TRACE("trial " + std::to_string(trial) + " ratio " + std::to_string(ratio));
          EXPECT_EQ(CheckSchedule(g, out.schedule), "");
          const Rewritten rw = Rewrite(g, out.schedule);
          EXPECT_EQ(CheckFaithful(rw.graph, &g), "");
          EXPECT_LE(testing::SchedulePeak(g, out.schedule), budget);
          EXPECT_LE(detail::RecomputeCost(g, out.schedule), in.recompute_cost + 1e-9);
          EXPECT_DOUBLE_EQ(out.recompute_cost, detail::RecomputeCost(g, out.schedule));
          const detail::MethodResult again =
              detail::SplitBudgetByBlocks(g, start, in, budget, params, 0);
          EXPECT_EQ(again.schedule, out.schedule);
          if (out.recompute_cost < in.recompute_cost) ++improved;
        }
      }
    }
    EXPECT_GT(improved, 0);
  }
}

// Its work limits: where the split improves a random training graph's greedy schedule, it gives
// up (the input back) once its options were measured on more steps than allowed, and keeps the
// input once its programme may weigh no more pairs than the first stage needs; with limits
// above what it uses, the same schedule as without limits.
TEST(BudgetSplit, GivesUpAtItsWorkLimits) {
  std::mt19937_64 rng(11);
  int checked = 0;
  for (int trial = 0; trial < 12 && checked < 3; ++trial) {
    testing::TrainingGraphOptions o;
    o.layers = 3 + trial % 5;
    const Graph g = testing::TrainingLikeGraph(rng, o);
    RematParams params;
    params.alignment = 1;
    params.blocks_dp.group_ops = 1 + trial % 4;
    params.blocks_dp.max_measured_steps = 0;
    params.blocks_dp.max_transitions = 0;
    const Schedule start = detail::BaseSchedule(g, params);
    const auto no_remat = static_cast<double>(NoRematPeak(g, params));
    for (double ratio : {0.9, 0.75, 0.6}) {
      const auto budget = static_cast<Bytes>(no_remat * ratio);
      const detail::MethodResult checkpoint = detail::Checkpoint(g, start, budget, params);
      if (checkpoint.peak > budget) continue;
      const detail::MethodResult in = Described(g, checkpoint.schedule, params);
      const detail::MethodResult free =
          detail::SplitBudgetByBlocks(g, start, in, budget, params, 0);
      if (free.recompute_cost >= in.recompute_cost) continue;
      ++checked;
      SCOPED_TRACE("trial " + std::to_string(trial) + " ratio " + std::to_string(ratio));
      RematParams limited = params;
      limited.blocks_dp.max_measured_steps = 1;
      EXPECT_EQ(detail::SplitBudgetByBlocks(g, start, in, budget, limited, 0).schedule,
                in.schedule);
      limited = params;
      limited.blocks_dp.max_transitions = 1;
      EXPECT_EQ(detail::SplitBudgetByBlocks(g, start, in, budget, limited, 0).schedule,
                in.schedule);
      limited = params;
      limited.blocks_dp.max_measured_steps = 1'000'000'000;
      limited.blocks_dp.max_transitions = 1'000'000'000;
      EXPECT_EQ(detail::SplitBudgetByBlocks(g, start, in, budget, limited, 0).schedule,
                free.schedule);
    }
  }
  EXPECT_GE(checked, 3);
}

// An input over the budget comes back unchanged.
TEST(BudgetSplit, LeavesAScheduleOverTheBudgetAlone) {
  const Graph g = testing::MlpChain(4, {1, 1, 1, 1, 1, 1, 1, 1, 1});
  RematParams params;
  params.alignment = 1;
  const Schedule start = detail::BaseSchedule(g, params);
  const detail::MethodResult in = Described(g, start, params);
  const detail::MethodResult out =
      detail::SplitBudgetByBlocks(g, start, in, in.peak - 1, params, 0);
  EXPECT_EQ(out.schedule, in.schedule);
  EXPECT_EQ(out.method, "test");
}

}  // namespace
}  // namespace roam::remat
