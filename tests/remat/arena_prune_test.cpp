// The prune in the arena (remat/arena_prune.cpp): repeats dropped from a plan that fits by its
// arena, each only where the layout, moved at the buffers that live longer, still fits.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "baseline/layouts.h"
#include "core/memory_model.h"
#include "core/plan.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/layered_graph.h"

namespace roam::remat {
namespace {

int Repeats(const Graph& graph, const Schedule& schedule) {
  return static_cast<int>(schedule.size()) - graph.num_ops();
}

// Every valid schedule of the tiny graphs with up to two recomputations, laid out by best-fit,
// pruned at the budget its arena meets: what comes back is the schedule less some of its
// repeats, within the budget by its theoretical peak and by the layout it returns (a valid
// one), and never cheaper than the cheapest schedule within the budget by the theoretical
// peak alone (brute force), a relaxation of the arena's constraint. The windows searched both
// as the prune searches them (fit.prune.search) and with the layout search's whole round-robin.
void DropsRepeatsOnlyWhereTheLayoutStillFits(const RematParams& params) {
  int pruned = 0, schedules = 0, searched = 0;
  for (const Graph& graph : testing::TinyRematGraphs(3)) {
    const auto points = testing::BruteForcePoints(graph, 2);
    testing::ForEachSchedule(graph, 2, [&](const Schedule& schedule) {
      if (Repeats(graph, schedule) == 0) return;
      ++schedules;
      detail::Evaluated eval = detail::Evaluate(graph, schedule, params);
      const std::vector<Interval> intervals = PlannedIntervals(eval.model, eval.lifetimes);
      std::vector<Bytes> offsets = PlaceBuffers("best-fit", intervals, 1);
      const Bytes budget = LayoutHeight(intervals, offsets);
      detail::MethodResult method = testing::Described(graph, schedule, params);
      const double before = method.recompute_cost;
      int windows = 1000;
      const int dropped =
          detail::PruneInArena(graph, budget, params, Deadline(), method, eval, offsets, windows);
      pruned += dropped > 0 ? 1 : 0;
      searched += windows < 1000 ? 1 : 0;
      EXPECT_EQ(Repeats(graph, method.schedule), Repeats(graph, schedule) - dropped);
      EXPECT_EQ(detail::Originals(graph, method.schedule), detail::Originals(graph, schedule));
      EXPECT_EQ(eval.peak, testing::SchedulePeak(graph, method.schedule));
      EXPECT_EQ(method.peak, eval.peak);
      EXPECT_LE(eval.peak, budget);
      if (dropped > 0) {
        EXPECT_LT(method.recompute_cost, before);
      } else {
        EXPECT_EQ(method.schedule, schedule);
      }
      EXPECT_GE(method.recompute_cost, testing::CheapestWithin(points, budget) - 1e-9);
      const Rewritten& rw = eval.rewritten;
      const Plan plan = AssemblePlan(rw.graph, eval.model, rw.order, offsets, 0.0);
      EXPECT_EQ(ValidatePlan(rw.graph, plan), "");
      EXPECT_LE(plan.summary.actual_peak, budget);
    });
  }
  EXPECT_GT(schedules, 100);
  EXPECT_GT(pruned, 10) << "no schedule exercised the prune";
  EXPECT_GT(searched, 0) << "no schedule exercised the windows";
}

TEST(ArenaPrune, DropsRepeatsOnlyWhereTheLayoutStillFitsAgainstBruteForce) {
  for (const bool whole_round_robin : {false, true}) {
    SCOPED_TRACE(whole_round_robin);
    RematParams params;
    params.alignment = 1;
    if (whole_round_robin) params.fit.prune.search = layout::SearchParams();
    DropsRepeatsOnlyWhereTheLayoutStillFits(params);
  }
}

// A budget its theoretical peak cannot exceed: a repeat whose value, kept, would raise the
// schedule's peak above it stays, whatever room the layout has.
TEST(ArenaPrune, KeepsEveryRepeatThatTheTheoreticalPeakNeeds) {
  RematParams params;
  params.alignment = 1;
  int schedules = 0;
  for (const Graph& graph : testing::TinyRematGraphs(5)) {
    testing::ForEachSchedule(graph, 2, [&](const Schedule& schedule) {
      if (Repeats(graph, schedule) == 0) return;
      detail::Evaluated eval = detail::Evaluate(graph, schedule, params);
      const std::vector<Interval> intervals = PlannedIntervals(eval.model, eval.lifetimes);
      std::vector<Bytes> offsets = PlaceBuffers("best-fit", intervals, 1);
      if (LayoutHeight(intervals, offsets) != eval.peak) return;  // no room but its own
      // Only where every single drop raises the theoretical peak.
      for (size_t i = 0; i < schedule.size(); ++i) {
        if (std::find(schedule.begin(), schedule.begin() + static_cast<long>(i), schedule[i]) ==
            schedule.begin() + static_cast<long>(i))
          continue;
        Schedule without = schedule;
        without.erase(without.begin() + static_cast<long>(i));
        if (!CheckSchedule(graph, without).empty()) continue;
        if (testing::SchedulePeak(graph, without) <= eval.peak) return;
      }
      ++schedules;
      detail::MethodResult method = testing::Described(graph, schedule, params);
      int windows = 1000;
      EXPECT_EQ(detail::PruneInArena(graph, eval.peak, params, Deadline(), method, eval, offsets,
                                     windows),
                0);
      EXPECT_EQ(method.schedule, schedule);
    });
  }
  EXPECT_GT(schedules, 0);
}

// On a random layered graph at 80% the fit loop's plan keeps repeats its lower target bought
// and its layout does not need: the prune gives them back, on the default path.
TEST(ArenaPrune, MakesTheFitLoopsPlanCheaperOnARandomLayeredGraph) {
  const Graph g = testing::RandomLayered({.nodes = 100}, 100);
  // Bounded by work alone (no clock, no exact method, no compute bound), so that the plans do
  // not depend on the machine.
  auto plan = [&](int trials) {
    RematParams params;
    params.alignment = 1;
    params.time_limit_s = params.fit.search_time_limit_s = 1e8;
    params.ilp.max_ops = params.overhead_bound.cuts = 0;
    params.fit.prune.max_trials = trials;
    return PlanRemat(g, *BudgetOfRatio(NoRematPeak(g, params), 0.8), params);
  };
  const RematParams defaults;
  const RematResult kept = plan(0), pruned = plan(defaults.fit.prune.max_trials);
  ASSERT_TRUE(kept.feasible);
  ASSERT_TRUE(pruned.feasible);
  EXPECT_LE(pruned.plan.summary.actual_peak, pruned.budget);
  EXPECT_LT(pruned.compute_overhead, kept.compute_overhead);
  EXPECT_GT(pruned.prune_saved, 0);
}

}  // namespace
}  // namespace roam::remat
