// The greedy: the incremental evaluation makes exactly the choices of the full one, one descent
// for many budgets gives what a run per budget gives, the swap local search only ever lowers
// the cost within the budget, and holding inputs once stalled changes no budget the chains
// reach.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/io.h"
#include "remat/internal.h"
#include "tests/support/layered_graph.h"
#include "tests/support/training_graph.h"

namespace roam::remat::detail {
namespace {

std::vector<Graph> RandomSteps() {
  std::vector<Graph> graphs;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    std::mt19937_64 rng(seed * 7919);
    roam::testing::TrainingGraphOptions o;
    o.layers = 2 + static_cast<int>(seed % 3);
    o.adam = seed % 3 != 0;
    graphs.push_back(roam::testing::TrainingLikeGraph(rng, o));
  }
  return graphs;
}

Schedule Start(const Graph& g) { return Schedule(g.program_order.begin(), g.program_order.end()); }

Bytes PeakOf(const Graph& g, const RematParams& params) {
  return Evaluate(g, Start(g), params).peak;
}

TEST(Greedy, TheIncrementalEvaluationChoosesExactlyAsTheFullOne) {
  // Alignment 1 too: there the swap finds cheaper schedules, so its choices are compared.
  for (const Graph& g : RandomSteps())
    for (Bytes alignment : {64, 1}) {
      RematParams params;
      params.alignment = alignment;
      params.greedy.stall_steps = 20;  // the full evaluation is slow on a long plateau
      const Bytes peak = PeakOf(g, params);
      for (double ratio : {0.8, 0.6, 0.4}) {
        const auto budget = static_cast<Bytes>(static_cast<double>(peak) * ratio);
        SCOPED_TRACE(g.name + " ratio " + std::to_string(ratio));
        const MethodResult fast = Greedy(g, Start(g), budget, params);
        const MethodResult full = Greedy(g, Start(g), budget, params, GreedyEvaluation::kReference);
        EXPECT_EQ(fast.schedule, full.schedule);
        EXPECT_EQ(fast.peak, full.peak);
        EXPECT_EQ(fast.recompute_cost, full.recompute_cost);
        EXPECT_EQ(fast.status, full.status);
        // What it reports is what the schedule does.
        const Evaluated e = Evaluate(g, fast.schedule, params);
        EXPECT_EQ(e.peak, fast.peak);
        EXPECT_EQ(fast.status == Status::kFeasible, fast.peak <= budget);
      }
    }
}

TEST(Greedy, OneDescentGivesEachBudgetWhatItsOwnRunGives) {
  for (const Graph& g : RandomSteps()) {
    RematParams params;
    params.alignment = 64;
    const Bytes peak = PeakOf(g, params);
    std::vector<Bytes> budgets;
    for (int i = 20; i >= 4; i -= 2) budgets.push_back(peak * i / 20);
    const std::vector<MethodResult> all = GreedyDescent(g, Start(g), budgets, params);
    ASSERT_EQ(all.size(), budgets.size());
    for (size_t i = 0; i < budgets.size(); ++i) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budgets[i]));
      const MethodResult one = Greedy(g, Start(g), budgets[i], params);
      EXPECT_EQ(all[i].schedule, one.schedule);
      EXPECT_EQ(all[i].peak, one.peak);
      EXPECT_EQ(all[i].status, one.status);
    }
  }
}

TEST(Greedy, TheSwapNeverRaisesTheCostNorLeavesTheBudget) {
  int improved = 0;
  for (const Graph& g : RandomSteps()) {
    RematParams with;
    with.alignment = 1;
    RematParams without = with;
    without.greedy.swap_attempts = 0;
    const Bytes peak = PeakOf(g, with);
    for (double ratio : {0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5}) {
      const auto budget = static_cast<Bytes>(static_cast<double>(peak) * ratio);
      SCOPED_TRACE(g.name + " ratio " + std::to_string(ratio));
      const MethodResult a = Greedy(g, Start(g), budget, without);
      const MethodResult b = Greedy(g, Start(g), budget, with);
      EXPECT_EQ(a.status, b.status);
      if (b.status != Status::kFeasible) continue;
      EXPECT_LE(b.recompute_cost, a.recompute_cost);
      EXPECT_LE(b.peak, budget);
      EXPECT_EQ(CheckSchedule(g, b.schedule, with.rule), "");
      EXPECT_EQ(Evaluate(g, b.schedule, with).peak, b.peak);
      EXPECT_DOUBLE_EQ(RecomputeCost(g, b.schedule), b.recompute_cost);
      improved += b.recompute_cost < a.recompute_cost ? 1 : 0;
    }
  }
  EXPECT_GT(improved, 0);  // the swap does something on these steps
}

// greedy.hold_inputs goes on only where the chains alone stall, from their lowest peak: each
// budget they reach gets the same schedule, and the lowest peak is never higher. With the
// second descent (greedy.hold_descent), no budget gets a worse plan than the chains' alone.
TEST(Greedy, HoldingInputsChangesNoBudgetTheChainsReach) {
  std::vector<Graph> graphs = RandomSteps();
  for (int nodes : {60, 100}) graphs.push_back(testing::RandomLayered({.nodes = nodes}, 7));
  int reached_only_holding = 0, better_with_both = 0;
  for (const Graph& g : graphs) {
    RematParams hold;
    hold.alignment = 1;
    hold.greedy.hold_descent = false;
    RematParams chains = hold;
    chains.greedy.hold_inputs = false;
    RematParams both = hold;
    both.greedy.hold_descent = true;
    const Bytes peak = PeakOf(g, hold);
    std::vector<Bytes> budgets;
    for (int i = 19; i >= 8; --i) budgets.push_back(peak * i / 20);
    const std::vector<MethodResult> a = GreedyDescent(g, Start(g), budgets, chains);
    const std::vector<MethodResult> b = GreedyDescent(g, Start(g), budgets, hold);
    const std::vector<MethodResult> c = GreedyDescent(g, Start(g), budgets, both);
    for (size_t i = 0; i < budgets.size(); ++i) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budgets[i]));
      EXPECT_FALSE(Better(b[i], c[i], budgets[i]));
      if (Better(c[i], b[i], budgets[i])) ++better_with_both;
      EXPECT_EQ(CheckSchedule(g, c[i].schedule, hold.rule), "");
      EXPECT_EQ(Evaluate(g, c[i].schedule, hold).peak, c[i].peak);
      EXPECT_LE(b[i].peak, a[i].peak);
      if (a[i].status == Status::kFeasible) {
        EXPECT_EQ(b[i].schedule, a[i].schedule);
        EXPECT_EQ(b[i].recompute_cost, a[i].recompute_cost);
        continue;
      }
      if (b[i].status != Status::kFeasible) continue;
      ++reached_only_holding;
      EXPECT_LE(b[i].peak, budgets[i]);
      EXPECT_EQ(CheckSchedule(g, b[i].schedule, hold.rule), "");
      EXPECT_EQ(Evaluate(g, b[i].schedule, hold).peak, b[i].peak);
      EXPECT_DOUBLE_EQ(RecomputeCost(g, b[i].schedule), b[i].recompute_cost);
    }
  }
  EXPECT_GT(reached_only_holding, 0);  // it does something where the chains stall
  EXPECT_GT(better_with_both, 0);      // and the second descent where they do not
}

// random-layered-100 at 80% of its peak: the chains stall above the budget (a large storage
// made from small inputs that died long before; the chain back from them is the only
// eviction offered), holding those inputs reaches it. The full evaluation makes the same
// choices in the second phase too.
TEST(Greedy, HoldsInputsWhereTheChainsStall) {
  const Graph g = testing::RandomLayered({.nodes = 100}, 100);
  RematParams hold;
  hold.alignment = 1;
  RematParams chains = hold;
  chains.greedy.hold_inputs = false;
  const Bytes budget = PeakOf(g, hold) * 8 / 10;
  const MethodResult a = Greedy(g, Start(g), budget, chains);
  EXPECT_EQ(a.status, Status::kInfeasible);
  EXPECT_GT(a.peak, budget);
  const MethodResult b = Greedy(g, Start(g), budget, hold);
  EXPECT_EQ(b.status, Status::kFeasible);
  EXPECT_LE(b.peak, budget);
  const MethodResult full = Greedy(g, Start(g), budget, hold, GreedyEvaluation::kReference);
  EXPECT_EQ(full.schedule, b.schedule);
  EXPECT_EQ(full.peak, b.peak);
}

TEST(Greedy, AnUnknownScoreIsBadInput) {
  const Graph g = RandomSteps().front();
  RematParams params;
  params.greedy.score = "bytes";
  EXPECT_THROW(PlanRemat(g, 1000, params), InputError);
}

}  // namespace
}  // namespace roam::remat::detail
