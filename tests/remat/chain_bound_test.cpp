// The compute lower bound at a chain of cuts (remat/chain_bound.cpp): never above the
// brute-force optimum (every order, up to three recomputations) on random tiny graphs at every
// budget, never below the single cut's bound, and strictly above it where recomputation is
// forced at two cuts; one cut reproduces the single-cut bound.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/random_graph.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using testing::BruteForceCost;

// Tiny training graphs and MLP chains of three seeds, and random DAGs with views, in-place
// writes and graph outputs.
std::vector<Graph> RandomTinyGraphs() {
  std::vector<Graph> graphs;
  for (std::uint64_t seed : {3u, 11u, 29u})
    for (Graph& g : testing::TinyRematGraphs(seed)) graphs.push_back(std::move(g));
  std::mt19937_64 rng(24);
  for (int i = 0; i < 12; ++i)
    graphs.push_back(testing::RandomGraph(rng, {.ops = 6, .max_size = 60}));
  return graphs;
}

RematParams Params(int chain_cuts) {
  RematParams params;
  params.alignment = 1;
  params.overhead_bound.chain_cuts = chain_cuts;
  return params;
}

TEST(ChainBound, NeverAboveTheBruteForceOptimumAndStrongerThanOneCutOnSome) {
  int stronger = 0, positive = 0;
  for (const Graph& g : RandomTinyGraphs()) {
    const double total = TotalCost(g);
    ASSERT_GT(total, 0.0);
    const Bytes no_remat = NoRematPeak(g, Params(0));
    const auto points = testing::BruteForcePoints(g, 3);
    for (Bytes budget = no_remat; budget > 0; budget -= std::max<Bytes>(1, no_remat / 12)) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const OverheadBound single = OverheadLowerBound(g, budget, Params(0));
      const OverheadBound chain = OverheadLowerBound(g, budget, Params(4));
      const double optimum = testing::CheapestWithin(points, budget);
      if (chain.infeasible) {
        EXPECT_TRUE(std::isinf(optimum));
        continue;
      }
      EXPECT_FALSE(single.infeasible);
      EXPECT_GE(chain.overhead, single.overhead);
      EXPECT_DOUBLE_EQ(chain.single_cut, single.overhead);
      if (std::isinf(optimum)) continue;
      EXPECT_LE(chain.overhead * total, optimum + 1e-9 * total);
      if (chain.overhead > 0) ++positive;
      if (chain.overhead > single.overhead * (1 + 1e-6) + 1e-9) {
        ++stronger;
        EXPECT_GE(chain.chain.size(), 2u);
      }
    }
  }
  EXPECT_GT(positive, 0);
  EXPECT_GT(stronger, 0);
}

// A four-layer MLP chain at 480 of its 510 bytes: at the turn one cut sees that one
// activation must be dropped and made again (cost 1), but the chain of three cuts through the
// backward sees that what the first backward step recomputes must be held or made again at the
// next cut too: 3, the brute-force optimum.
TEST(ChainBound, StrictlyAboveOneCutAndTightOnAnMlpChain) {
  const Graph g = testing::MlpChain(4, {3, 1, 4, 1, 5, 9, 2, 6, 5});
  ASSERT_EQ(NoRematPeak(g, Params(0)), 510);
  const Bytes budget = 480;
  const OverheadBound single = OverheadLowerBound(g, budget, Params(0));
  const OverheadBound chain = OverheadLowerBound(g, budget, Params(4));
  const double total = TotalCost(g);
  EXPECT_NEAR(single.overhead * total, 1.0, 1e-4);
  EXPECT_NEAR(chain.overhead * total, 3.0, 1e-4);
  EXPECT_GE(chain.chain.size(), 2u);
  EXPECT_DOUBLE_EQ(BruteForceCost(g, budget, 3), 3.0);
  // The plan is then proven optimal by the chain's bound.
  const RematResult r = PlanRemat(g, budget, Params(4));
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.status, Status::kOptimal);
  EXPECT_NEAR(r.recompute_cost, 3.0, 1e-6);
}

// One cut on the chain is the single-cut bound: chain_cuts 1 changes nothing.
TEST(ChainBound, OneCutIsTheSingleCutBound) {
  for (const Graph& g : testing::TinyRematGraphs(11)) {
    const Bytes no_remat = NoRematPeak(g, Params(0));
    for (Bytes budget = no_remat; budget > 0; budget -= std::max<Bytes>(1, no_remat / 6)) {
      const OverheadBound off = OverheadLowerBound(g, budget, Params(0));
      const OverheadBound one = OverheadLowerBound(g, budget, Params(1));
      EXPECT_EQ(off.infeasible, one.infeasible);
      EXPECT_EQ(off.overhead, one.overhead);
      EXPECT_TRUE(one.chain.empty());
    }
  }
}

}  // namespace
}  // namespace roam::remat
