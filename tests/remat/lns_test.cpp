// Ruin and recreate (remat/lns.cpp): never over the budget by the arena nor below brute force's
// optimum on tiny graphs, cheaper than best without it where the swap search stops, and the
// same schedule from the same seed whatever the clock says.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <vector>

#include "core/deadline.h"
#include "core/memory_model.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/layered_graph.h"

namespace roam::remat {
namespace {

RematParams LnsAlone() {
  RematParams params;
  params.method = "lns";
  params.alignment = 1;
  params.time_limit_s = 1e8;
  params.fit.search_time_limit_s = 1e6;
  params.overhead_bound.cuts = 0;
  params.greedy.swap_attempts = 0;  // so that the greedy's schedules leave room to improve
  params.greedy.prune_attempts = 0;
  params.greedy.hold_descent = false;
  params.fit.prune.max_trials = 0;  // nor the fit loop's prune in the arena
  return params;
}

// The plan with ruin and recreate (its rounds as params has them) fits the arena, ends on
// its schedule and costs less than `factor` times the plan without it.
void ExpectLnsCheaper(const Graph& g, Bytes budget, const RematParams& params, double factor) {
  const RematResult with = PlanRemat(g, budget, params);
  RematParams without = params;
  without.lns.rounds = 0;
  const RematResult before = PlanRemat(g, budget, without);
  ASSERT_TRUE(with.feasible);
  ASSERT_TRUE(before.feasible);
  EXPECT_LE(with.plan.summary.actual_peak, budget);
  EXPECT_EQ(with.method, "lns");
  EXPECT_LT(with.compute_overhead, before.compute_overhead * factor);
}

// Every budget between the lowest peak of brute force's space (at most 2 recomputations, each
// op at most twice) and the no-remat peak, on the oracle graphs: `--method lns` (the greedy's
// schedule, then ruin and recreate) lays out within the budget where it reports a fit, its
// plan is valid and faithful, and a schedule of brute force's space costs no less than its
// cheapest within the budget; and ruin and recreate is cheaper than the greedy alone somewhere.
TEST(RuinAndRecreate, FitsTheArenaAndNeverBeatsBruteForce) {
  int cheaper = 0;
  for (const Graph& g : testing::TinyRematGraphs(24)) {
    const RematParams params = LnsAlone();
    RematParams greedy = params;
    greedy.method = "greedy";
    const auto all = testing::BruteForcePoints(g, 2);
    Bytes min_peak = std::numeric_limits<Bytes>::max();
    for (const auto& [peak, cost] : all) min_peak = std::min(min_peak, peak);
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = min_peak; budget <= no_remat; ++budget) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const double min_cost = testing::CheapestWithin(all, budget);
      const RematResult r = PlanRemat(g, budget, params);
      EXPECT_EQ(ValidatePlan(r.rewritten.graph, r.plan), "");
      EXPECT_EQ(CheckFaithful(r.rewritten.graph, &g), "");
      if (!r.feasible) continue;
      EXPECT_LE(r.plan.summary.actual_peak, budget);
      std::vector<int> computations(g.ops.size(), 0);
      for (OpId op : r.schedule) ++computations[static_cast<size_t>(op)];
      if (r.schedule.size() <= g.ops.size() + 2 &&
          *std::max_element(computations.begin(), computations.end()) <= 2) {
        EXPECT_GE(r.recompute_cost + 1e-9, min_cost);
      }
      const RematResult alone = PlanRemat(g, budget, greedy);
      if (alone.feasible) {
        EXPECT_LE(r.recompute_cost, alone.recompute_cost + 1e-9);
        if (r.recompute_cost < alone.recompute_cost - 1e-9) ++cheaper;
      }
    }
  }
  EXPECT_GT(cheaper, 0);
}

// random-layered-100 at 90%: best's swap search and the lookahead stop at 3.33% added compute;
// ruin and recreate crosses that plateau (1.67% when measured, perf/RESULTS.md).
TEST(RuinAndRecreate, TakesBestBelowItsOtherMethodsOnALayeredGraph) {
  const Graph g = testing::RandomLayered({.nodes = 100}, 100);
  RematParams params;
  params.alignment = 1;
  params.time_limit_s = 1e8;
  params.fit.search_time_limit_s = 1e6;
  params.overhead_bound.cuts = 0;
  params.ilp.max_ops = 0;
  params.greedy.hold_descent = false;  // the greedy's second descent reaches 1.67% itself
  params.fit.prune.max_trials = 0;     // and the prune in the arena 1.25%
  ExpectLnsCheaper(g, NoRematPeak(g, params) * 90 / 100, params, 0.75);
}

// MOCCASIN's problem on random-layered-100 in the random input order of seed 3, kept, at 80%
// of its peak: the greedy's schedules lay out 34-113 B over the budget, so the fit loop
// retries at lower targets. Ruin and recreate there checks a cheaper schedule's arena against
// the budget, not the retry's target: checked against the target (as it was), it found no
// cheaper schedule, and the plan cost 37.29% instead of 20.72%; with no rounds, 27.97%
// (perf/RESULTS.md).
TEST(RuinAndRecreate, ChecksTheArenaAgainstTheBudgetNotARetrysTarget) {
  const Graph g = testing::InRandomOrder(testing::RandomLayered({.nodes = 100}, 100), 3);
  RematParams params;
  params.alignment = 1;
  params.base_order = "program";
  params.start_orders.clear();
  params.fit.reorder_orders.clear();
  params.fit.fallback_base_orders.clear();
  params.time_limit_s = 1e8;
  params.fit.search_time_limit_s = 1e6;
  params.fit.refine_retries = 0;       // the retries as they were, without the bisection after them
  params.greedy.hold_descent = false;  // and the greedy's single descent
  params.fit.prune.max_trials = 0;     // lns's own gain, not the prune's after it
  ExpectLnsCheaper(g, *BudgetOfRatio(NoRematPeak(g, params), 0.8), params, 0.8);
}

// Its work is counted in rounds and layout nodes and its draws come from a fixed sequence: a
// clock that reads an hour later at every look (a machine slowed down, within the deadline)
// gives the schedule a clock that stands still gives, and so does a second run; another seed
// may give another walk, still within the budget.
TEST(RuinAndRecreate, TheSameScheduleWhateverTheClock) {
  const Graph g = testing::RandomLayered({.nodes = 100}, 100);
  RematParams params;
  params.alignment = 1;
  const Bytes budget = NoRematPeak(g, params) * 90 / 100;
  const Schedule base = detail::BaseSchedule(g, params);
  // The lookahead's schedule (3.33%), which it improves.
  const detail::MethodResult greedy = detail::Lookahead(g, base, budget, params, Deadline());
  ASSERT_LE(greedy.peak, budget);
  auto clock = [](bool racing) {
    const Deadline::Clock::time_point start = Deadline::Clock::now();
    auto readings = std::make_shared<int>(0);
    return Deadline(
        1e9, nullptr,
        [readings, start, racing] {
          ++*readings;
          return racing ? start + std::chrono::hours(*readings) : start;
        },
        start);
  };
  const detail::MethodResult still =
      detail::RuinAndRecreate(g, greedy, budget, budget, params, clock(false));
  const detail::MethodResult racing =
      detail::RuinAndRecreate(g, greedy, budget, budget, params, clock(true));
  const detail::MethodResult again =
      detail::RuinAndRecreate(g, greedy, budget, budget, params, Deadline());
  EXPECT_LT(still.recompute_cost, greedy.recompute_cost);
  EXPECT_EQ(still.schedule, racing.schedule);
  EXPECT_EQ(still.schedule, again.schedule);
  RematParams other = params;
  other.lns.seed = 2;
  const detail::MethodResult seeded =
      detail::RuinAndRecreate(g, greedy, budget, budget, other, Deadline());
  EXPECT_LE(seeded.peak, budget);
  EXPECT_LE(seeded.recompute_cost, greedy.recompute_cost);
}

// Past the deadline it returns the incumbent, or what it had, within the budget.
TEST(RuinAndRecreate, StopsAtTheDeadline) {
  const Graph g = testing::RandomLayered({.nodes = 100}, 100);
  RematParams params;
  params.alignment = 1;
  const Bytes budget = NoRematPeak(g, params) * 90 / 100;
  const detail::MethodResult greedy =
      detail::Greedy(g, detail::BaseSchedule(g, params), budget, params);
  std::atomic<bool> stop{true};
  const detail::MethodResult r =
      detail::RuinAndRecreate(g, greedy, budget, budget, params, Deadline(0, &stop));
  EXPECT_EQ(r.schedule, greedy.schedule);
}

}  // namespace
}  // namespace roam::remat
