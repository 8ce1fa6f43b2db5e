// The schedule seeded by the compute bound's witness (remat/witness.cpp): on tiny graphs at
// every budget, what it returns is a valid, faithful schedule within the budget, never cheaper
// than the brute-force optimum and reaching it on some; an incumbent it cannot beat comes back
// unchanged; `roam remat --method witness` plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "remat/internal.h"
#include "remat/methods.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using testing::BruteForceCost;
using testing::Described;
using testing::SchedulePeak;

std::vector<Graph> TinyGraphs() { return testing::TinyRematGraphs(23); }

TEST(Witness, FitsTheBudgetValidAndNeverCheaperThanBruteForce) {
  int followed = 0, optimal = 0;
  for (const Graph& g : TinyGraphs()) {
    RematParams params;
    params.alignment = 1;
    const Schedule base = detail::BaseSchedule(g, params);
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = no_remat - 1; budget > 0; budget -= std::max<Bytes>(1, no_remat / 12)) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const OverheadBound bound = OverheadLowerBound(g, budget, params);
      if (bound.infeasible) continue;
      // The base order is over the budget: whatever fits is taken.
      const detail::MethodResult over = Described(g, base, params);
      ASSERT_GT(over.peak, budget);
      const detail::MethodResult out = detail::FollowWitness(g, base, over, budget, params, bound);
      if (out.method != "witness") {
        EXPECT_EQ(out.schedule, base);
        continue;
      }
      ++followed;
      EXPECT_EQ(CheckSchedule(g, out.schedule, params.rule), "");
      EXPECT_EQ(CheckFaithful(Rewrite(g, out.schedule).graph, &g), "");
      EXPECT_EQ(SchedulePeak(g, out.schedule), out.peak);
      EXPECT_LE(out.peak, budget);
      EXPECT_DOUBLE_EQ(out.recompute_cost, detail::RecomputeCost(g, out.schedule));
      EXPECT_GE(out.recompute_cost, bound.overhead * TotalCost(g) * (1 - 1e-6));
      // Brute force covers schedules of up to 3 copies.
      const double optimum = BruteForceCost(g, budget, 3);
      if (out.schedule.size() <= base.size() + 3) {
        EXPECT_GE(out.recompute_cost, optimum - 1e-9);
      }
      if (std::abs(out.recompute_cost - optimum) <= 1e-9) ++optimal;
      // An incumbent it cannot beat comes back as it was.
      const detail::MethodResult again = detail::FollowWitness(g, base, out, budget, params, bound);
      EXPECT_EQ(again.schedule, out.schedule);
    }
  }
  EXPECT_GT(followed, 0);
  EXPECT_GT(optimal, 0);
}

TEST(Witness, WithoutAWitnessKeepsTheIncumbent) {
  const Graph g = testing::MlpChain(4, {3, 1, 4, 1, 5, 9, 2, 6, 5});
  RematParams params;
  params.alignment = 1;
  const Schedule base = detail::BaseSchedule(g, params);
  const detail::MethodResult in = Described(g, base, params);
  const detail::MethodResult out = detail::FollowWitness(g, base, in, 1, params, OverheadBound{});
  EXPECT_EQ(out.schedule, in.schedule);
  EXPECT_EQ(out.method, in.method);
}

// In a preset, at a fit retry's target below the budget its bound was computed at, the witness
// keeps the incumbent unless witness.at_retries; with it, it follows a bound computed at the
// target, as named alone. On tiny graphs at every budget and a target below it.
TEST(Witness, APresetsWitnessRunsAtARetrysTargetOnlyWhenAsked) {
  int followed = 0;
  for (const Graph& g : TinyGraphs()) {
    RematParams params;
    params.alignment = 1;
    const detail::Context ctx(g, params);
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = no_remat - 1; budget > 1; budget -= std::max<Bytes>(1, no_remat / 8)) {
      const Bytes target = budget - std::max<Bytes>(1, budget / 10);
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget) + " target " +
                   std::to_string(target));
      const OverheadBound at_budget = OverheadLowerBound(g, budget, params);
      detail::Shared shared;
      shared.bound = &at_budget;
      shared.bound_budget = budget;
      const detail::MethodResult over = Described(g, ctx.start, params);
      Schedule unused;
      for (bool at_retries : {false, true}) {
        RematParams p = params;
        p.witness.at_retries = at_retries;
        detail::Call call{ctx, p, unused, shared, false, budget};
        const detail::MethodResult out = detail::Find("witness").improve(call, over, target);
        if (!at_retries) {
          EXPECT_EQ(out.schedule, over.schedule);
          EXPECT_EQ(out.method, over.method);
          continue;
        }
        const detail::MethodResult own =
            detail::FollowWitness(g, ctx.start, over, target, p, OverheadLowerBound(g, target, p));
        EXPECT_EQ(out.schedule, own.schedule);
        if (out.method == "witness") ++followed;
      }
    }
  }
  EXPECT_GT(followed, 0);  // where asked, it does run
}

TEST(Witness, IsAMethodOfItsOwnAndPlansWithinTheBudget) {
  int planned = 0;
  for (const Graph& g : TinyGraphs()) {
    RematParams params;
    params.alignment = 1;
    params.method = "witness";
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = no_remat; budget > 0; budget -= std::max<Bytes>(1, no_remat / 6)) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const RematResult r = PlanRemat(g, budget, params);  // validates the plan, or throws
      if (!r.feasible) continue;
      ++planned;
      EXPECT_LE(r.plan.summary.actual_peak, budget);
      EXPECT_LE(r.lower_bound, r.compute_overhead * (1 + 1e-6));
    }
  }
  EXPECT_GT(planned, 0);
}

}  // namespace
}  // namespace roam::remat
