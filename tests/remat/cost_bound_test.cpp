// The compute lower bound (remat/cost_bound.cpp): never above the brute-force optimum on tiny
// graphs at any budget, equal to it on some (so a bound that ignored the cut's forced storages
// or a copy's inputs would fail one way or the other), zero where nothing must be recomputed,
// and a proof of infeasibility only where brute force finds nothing; PlanRemat labels a plan
// optimal only where it costs the brute-force optimum.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/io.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using testing::BruteForceCost;

std::vector<Graph> TinyGraphs() { return testing::TinyRematGraphs(11); }

TEST(OverheadBound, NeverAboveTheBruteForceOptimumAndTightOnSome) {
  int positive = 0, tight = 0, proven_out_of_reach = 0;
  for (const Graph& g : TinyGraphs()) {
    RematParams params;
    params.alignment = 1;
    const double total = TotalCost(g);
    ASSERT_GT(total, 0.0);
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = no_remat; budget > 0; budget -= std::max<Bytes>(1, no_remat / 12)) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const OverheadBound bound = OverheadLowerBound(g, budget, params);
      const double optimum = BruteForceCost(g, budget, 3);
      if (bound.infeasible) {
        ++proven_out_of_reach;
        EXPECT_TRUE(std::isinf(optimum));
        continue;
      }
      EXPECT_GE(bound.overhead, 0.0);
      if (std::isinf(optimum)) continue;
      EXPECT_LE(bound.overhead * total, optimum + 1e-9 * total);
      if (bound.overhead > 0) ++positive;
      if (optimum > 0 && bound.overhead * total >= optimum * (1 - 1e-5)) ++tight;
    }
  }
  EXPECT_GT(positive, 0);
  EXPECT_GT(tight, 0);
  EXPECT_GT(proven_out_of_reach, 0);
}

// The backward reads the activation through a view whose op depends on nothing after the
// forward, so it is neither before nor after the cut: dropping the activation at the cut
// still costs its producer (a bound that only followed tensors made before the cut would be
// 0 here, as it was on GPT-2 XL's attention dropouts, read through transposes).
TEST(OverheadBound, CountsAStorageReadAfterTheCutThroughAFloatingView) {
  const Graph g = ParseGraph(R"({"format": "roam-graph-v1", "name": "floating-view",
    "ops": [{"id": 0, "name": "aten.mm", "phase": "forward", "cost": 10},
            {"id": 1, "name": "aten.t", "phase": "forward", "cost": 0},
            {"id": 2, "name": "aten.sum", "phase": "forward", "cost": 1},
            {"id": 3, "name": "aten.ones_like", "phase": "backward", "cost": 1},
            {"id": 4, "name": "aten.mm_backward", "phase": "backward", "cost": 1}],
    "tensors": [
      {"id": 0, "size": 100, "producer": null, "consumers": [0], "alias_of": null, "output": false, "kind": "input"},
      {"id": 1, "size": 100, "producer": 0, "consumers": [1, 2], "alias_of": null, "output": false, "kind": "activation"},
      {"id": 2, "size": 100, "producer": 1, "consumers": [4], "alias_of": 1, "output": false, "kind": "activation"},
      {"id": 3, "size": 20, "producer": 2, "consumers": [3], "alias_of": null, "output": false, "kind": "activation"},
      {"id": 4, "size": 100, "producer": 3, "consumers": [4], "alias_of": null, "output": false, "kind": "gradient"},
      {"id": 5, "size": 10, "producer": 4, "consumers": [], "alias_of": null, "output": true, "kind": "gradient"}]})",
                             "floating-view");
  RematParams params;
  params.alignment = 1;
  const Bytes budget = 210;  // the turn holds 220 without recomputation
  ASSERT_EQ(NoRematPeak(g, params), 220);
  const OverheadBound bound = OverheadLowerBound(g, budget, params);
  EXPECT_EQ(bound.cut, 3);
  EXPECT_NEAR(bound.overhead * TotalCost(g), 10.0, 1e-4);
  EXPECT_DOUBLE_EQ(BruteForceCost(g, budget, 3), 10.0);
  const RematResult r = PlanRemat(g, budget, params);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.status, Status::kOptimal);
}

TEST(OverheadBound, IsZeroWhereTheNoRematPeakFits) {
  for (const Graph& g : TinyGraphs()) {
    RematParams params;
    params.alignment = 1;
    const OverheadBound bound = OverheadLowerBound(g, NoRematPeak(g, params), params);
    EXPECT_FALSE(bound.infeasible);
    EXPECT_EQ(bound.overhead, 0.0);
  }
}

TEST(OverheadBound, OffWithNoCuts) {
  const Graph g = testing::MlpChain(4, {3, 1, 4, 1, 5, 9, 2, 6, 5});
  RematParams params;
  params.alignment = 1;
  params.overhead_bound.cuts = 0;
  const OverheadBound bound = OverheadLowerBound(g, 1, params);
  EXPECT_FALSE(bound.infeasible);
  EXPECT_EQ(bound.overhead, 0.0);
  EXPECT_EQ(bound.cut, kNoOp);
}

// The report's lower_bound is the bound, and "optimal" only where the plan costs the
// brute-force optimum.
TEST(OverheadBound, PlanRematLabelsOptimalOnlyTheBruteForceOptimum) {
  int optimal = 0;
  for (const Graph& g : TinyGraphs()) {
    RematParams params;
    params.alignment = 1;
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = no_remat; budget > 0; budget -= std::max<Bytes>(1, no_remat / 6)) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const RematResult r = PlanRemat(g, budget, params);
      if (!r.feasible) continue;
      EXPECT_LE(r.lower_bound, r.compute_overhead * (1 + 1e-6));
      EXPECT_GE(r.lower_bound, OverheadLowerBound(g, budget, params).overhead);
      if (r.status != Status::kOptimal) continue;
      ++optimal;
      EXPECT_NEAR(r.recompute_cost, BruteForceCost(g, budget, 3), 1e-6 * r.original_cost);
    }
  }
  EXPECT_GT(optimal, 0);
}

}  // namespace
}  // namespace roam::remat
