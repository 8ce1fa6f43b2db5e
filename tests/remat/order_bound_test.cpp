// The in-order lower bound (remat/order_bound.cpp): never above the brute-force optimum among
// schedules keeping the order (up to three recomputations) on random tiny graphs at every
// budget, with and without the copies' inputs, infeasible only where no such schedule fits; and the
// plans' order_lower_bound: never above their cost, positive on MOCCASIN's random layered graphs
// with their order kept.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "remat/bound.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/layered_graph.h"
#include "tests/support/random_graph.h"

namespace roam::remat {
namespace {

using detail::Originals;

TEST(OrderBound, NeverAboveTheBruteForceOptimumInOrderAndInfeasibleOnlyWhereNothingFits) {
  std::vector<Graph> graphs;
  for (std::uint64_t seed : {3u, 11u})
    for (Graph& g : testing::TinyRematGraphs(seed)) graphs.push_back(std::move(g));
  std::mt19937_64 rng(24);
  for (int i = 0; i < 10; ++i)
    graphs.push_back(testing::RandomGraph(rng, {.ops = 6, .max_size = 60}));
  // Layered, in a random order: copies whose inputs the order has long freed.
  for (unsigned seed = 1; seed <= 6; ++seed)
    graphs.push_back(testing::InRandomOrder(
        testing::RandomLayered({.nodes = 8, .width = 2, .back_layers = 3}, seed), seed));
  RematParams params;
  params.alignment = 1;
  RematParams lp_only = params;  // the LP relaxation alone: one node
  lp_only.order_bound.max_nodes = 1;
  RematParams no_inputs = params;  // copies' inputs left out
  no_inputs.order_bound.input_levels = 0;
  int positive = 0, tight = 0, infeasible = 0, inputs_raise = 0;
  for (const Graph& g : graphs) {
    const double total = TotalCost(g);
    ASSERT_GT(total, 0.0);
    const Schedule base = detail::BaseSchedule(g, params);
    std::vector<std::pair<Bytes, double>> in_order;  // (peak, cost) of schedules keeping base
    testing::ForEachSchedule(g, 3, [&](const Schedule& s) {
      if (Originals(g, s) == base)
        in_order.emplace_back(testing::SchedulePeak(g, s), detail::RecomputeCost(g, s));
    });
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = no_remat; budget > 0; budget -= std::max<Bytes>(1, no_remat / 12)) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const OrderBound bound = InOrderLowerBound(g, base, budget, params, 30);
      const double optimum = testing::CheapestWithin(in_order, budget);
      if (bound.infeasible) {
        EXPECT_TRUE(std::isinf(optimum));
        ++infeasible;
        continue;
      }
      EXPECT_GE(bound.overhead, 0.0);
      if (std::isinf(optimum)) continue;  // more than three recomputations may fit
      EXPECT_LE(bound.overhead * total, optimum + 1e-9);
      if (bound.overhead > 0) ++positive;
      if (optimum > 0 && bound.overhead * total >= optimum * (1 - 1e-5)) ++tight;
      // Branching never proves less than the LP relaxation it starts from.
      EXPECT_GE(bound.overhead,
                InOrderLowerBound(g, base, budget, lp_only, 30).overhead * (1 - 1e-6));
      // Without the copies' inputs, or with deeper ones: never above the optimum either, and
      // the inputs prove more.
      const OrderBound without = InOrderLowerBound(g, base, budget, no_inputs, 30);
      EXPECT_FALSE(without.infeasible);
      EXPECT_LE(without.overhead * total, optimum + 1e-9);
      inputs_raise += bound.overhead > without.overhead * (1 + 1e-3);
      RematParams deeper = params;
      deeper.order_bound.input_levels = 4;
      EXPECT_LE(InOrderLowerBound(g, base, budget, deeper, 30).overhead * total, optimum + 1e-9);
    }
  }
  EXPECT_GE(inputs_raise, 1);
  // Not trivially 0, exact on some budgets, and it proves some budgets out of reach.
  EXPECT_GE(positive, 12);
  EXPECT_GE(tight, 5);
  EXPECT_GE(infeasible, 5);
}

TEST(OrderBound, ZeroWhereTheOrderFitsGrowsAsTheBudgetFallsAndBranchingProvesMore) {
  const Graph g = testing::RandomLayered({.nodes = 100}, 100);
  RematParams params;
  params.alignment = 1;
  const Schedule base = detail::BaseSchedule(g, params);
  RematParams lp_only = params;
  lp_only.order_bound.max_nodes = 1;
  RematParams no_inputs = params;
  no_inputs.order_bound.input_levels = 0;
  int inputs_raise = 0;
  const Bytes no_remat = NoRematPeak(g, params);
  EXPECT_EQ(InOrderLowerBound(g, base, no_remat, params, 30).overhead, 0.0);
  double last = 0;
  int branched = 0;
  for (double ratio : {0.95, 0.9, 0.85, 0.8}) {
    const Bytes budget = *BudgetOfRatio(no_remat, ratio);
    const OrderBound b = InOrderLowerBound(g, base, budget, params, 30);
    ASSERT_FALSE(b.infeasible);
    EXPECT_GE(b.overhead, last * (1 - 1e-6));
    last = b.overhead;
    // Branching (max_nodes) proves more than the LP relaxation here: copies of one producer
    // serve several gaps only fractionally in the LP.
    const double lp = InOrderLowerBound(g, base, budget, lp_only, 30).overhead;
    EXPECT_GE(b.overhead, lp * (1 - 1e-6));
    branched += b.overhead > lp * (1 + 1e-3);
    const double without = InOrderLowerBound(g, base, budget, no_inputs, 30).overhead;
    EXPECT_GE(b.overhead, without * (1 - 1e-3));
    inputs_raise += b.overhead > without * (1 + 1e-2);
  }
  EXPECT_GT(last, 0.0);
  EXPECT_GE(branched, 2);
  // Copies' inputs held or made again prove more (at 85%: 1.57% -> 1.65%).
  EXPECT_GE(inputs_raise, 1);
}

// order_bound.max_nonzeros bounds the model's memory, not only its solve: a model past it is
// abandoned as soon as it counts more (its inputs grow as inputs^levels), and a budget out of
// reach is still proven, whatever the allowance.
TEST(OrderBound, AbandonsAModelAsSoonAsItPassesItsNonzeroAllowance) {
  const Graph g = testing::RandomLayered({.nodes = 100}, 100);
  RematParams params;
  params.alignment = 1;
  params.order_bound.max_nodes = 1;
  params.order_bound.input_levels = 4;
  params.order_bound.max_nonzeros = 0;  // no limit
  const Schedule base = detail::BaseSchedule(g, params);
  const Bytes budget = *BudgetOfRatio(NoRematPeak(g, params), 0.8);
  const OrderBound full = InOrderLowerBound(g, base, budget, params, 30);
  ASSERT_GT(full.overhead, 0.0);
  RematParams no_inputs = params;
  no_inputs.order_bound.input_levels = 0;
  const OrderBound small = InOrderLowerBound(g, base, budget, no_inputs, 30);
  ASSERT_GT(small.nonzeros, 0);
  ASSERT_GT(full.nonzeros, 4 * small.nonzeros);  // the inputs are most of it
  for (std::int64_t allowed : {small.nonzeros, full.nonzeros / 2, full.nonzeros - 1}) {
    SCOPED_TRACE("allowed " + std::to_string(allowed));
    params.order_bound.max_nonzeros = allowed;
    const OrderBound b = InOrderLowerBound(g, base, budget, params, 30);
    EXPECT_EQ(b.overhead, 0.0);
    EXPECT_FALSE(b.infeasible);
    EXPECT_EQ(b.solver, "skipped: more nonzeros than order_bound.max_nonzeros");
    // Stopped at the need or hold that passed it: at most a row's worth more.
    EXPECT_GT(b.nonzeros, allowed);
    EXPECT_LE(b.nonzeros, allowed + 1000);
  }
  params.order_bound.max_nonzeros = full.nonzeros;  // exactly: solved
  EXPECT_EQ(InOrderLowerBound(g, base, budget, params, 30).overhead, full.overhead);
  // Out of reach with any allowance: nothing evictable covers the largest step.
  params.order_bound.max_nonzeros = 1;
  const OrderBound none = InOrderLowerBound(g, base, 1, params, 30);
  EXPECT_TRUE(none.infeasible);
  EXPECT_EQ(none.solver, "infeasible");
}

// MOCCASIN's problem (the input order kept): the compute lower bound is 0 on these graphs
// (no op forces the budget in every order), the in-order bound is not, and every plan that
// keeps its order reports it, never above its cost.
TEST(OrderBound, PlansKeepingTheirOrderReportItOnRandomLayeredGraphs) {
  RematParams params;
  params.alignment = 1;
  params.method = "greedy";
  params.fit.search_max_nodes = 10'000;  // the layouts' quality is not what is tested
  params.base_order = "program";
  params.start_orders.clear();
  params.fit.reorder_orders.clear();
  params.fit.fallback_base_orders.clear();
  int positive = 0;
  for (unsigned seed : {1u, 2u, 3u}) {
    const Graph g = testing::InRandomOrder(testing::RandomLayered({.nodes = 100}, 100), seed);
    const Bytes no_remat = NoRematPeak(g, params);
    for (double ratio : {0.9, 0.8}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " ratio " + std::to_string(ratio));
      const RematResult r = PlanRemat(g, *BudgetOfRatio(no_remat, ratio), params);
      if (!r.feasible) continue;
      EXPECT_EQ(Originals(g, r.schedule), detail::BaseSchedule(g, params));
      EXPECT_LE(r.order_lower_bound, r.compute_overhead * (1 + 1e-9));
      if (r.compute_overhead > 0) {
        EXPECT_EQ(r.status == Status::kOptimalInOrder,
                  r.compute_overhead <= r.order_lower_bound * (1 + 2e-6));
      }
      positive += r.order_lower_bound > 0;
    }
  }
  EXPECT_GE(positive, 4);
  // Off, nothing is reported.
  params.order_bound.enabled = false;
  const Graph g = testing::InRandomOrder(testing::RandomLayered({.nodes = 100}, 100), 1);
  const RematResult r = PlanRemat(g, *BudgetOfRatio(NoRematPeak(g, params), 0.8), params);
  EXPECT_EQ(r.order_lower_bound, 0.0);
}

}  // namespace
}  // namespace roam::remat
