// remat under a deadline and by its work limits (docs/remat.md, "Work limits and the time
// limit"), and what the budget bounds (fit.by: the arena, or the theoretical peak).
#include "core/deadline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <vector>

#include "config/config.h"
#include "core/error.h"
#include "gen/generate.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/layered_graph.h"

namespace roam::remat {
namespace {

using Clock = Deadline::Clock;

RematParams Defaults() {
  RematParams params;
  params.alignment = 1;
  return params;
}

// A clock that runs `factor` times faster than the real one from its first reading: a machine
// that many times slower, or that loaded.
Deadline::Now Slow(double factor) {
  const Clock::time_point start = Clock::now();
  return [start, factor] {
    const auto real = Clock::now() - start;
    return start + std::chrono::duration_cast<Clock::duration>(real * factor);
  };
}

// The same plan, bit for bit, on a machine 4x slower: every search is bounded by its work, and
// the time limit is only an outer cap. random-layered-30 runs every method of best, the
// exact one included, whose MILP stops on its node limit at 90% and at 80%.
TEST(RematDeadline, TheSamePlanOnAMachineFourTimesSlower) {
  const Graph g = testing::RandomLayered({.nodes = 30}, 30);
  RematParams params = Defaults();
  // A cap far above the work (sanitizer builds run several times slower than release ones).
  params.time_limit_s = 1200;
  for (int percent : {90, 80}) {
    SCOPED_TRACE(std::to_string(percent) + "%");
    const Bytes budget = NoRematPeak(g, params) * percent / 100;
    const RematResult normal = PlanRemat(g, budget, params);
    const RematResult slow =
        PlanRemat(g, budget, params, Deadline(params.time_limit_s, nullptr, Slow(4)));
    ASSERT_FALSE(normal.timed_out);
    ASSERT_FALSE(slow.timed_out);
    EXPECT_EQ(slow.schedule, normal.schedule);
    EXPECT_EQ(slow.plan.buffers, normal.plan.buffers);
    EXPECT_EQ(slow.status, normal.status);
    EXPECT_EQ(slow.lower_bound, normal.lower_bound);
    EXPECT_EQ(slow.method, normal.method);
  }
}

// The deadline strikes after the k-th look at the clock, for k from the start on: whatever
// has been done by then, the answer is a valid, faithful plan, within the budget where it says
// so, and where nothing fitted in time the status says the time ran out.
TEST(RematDeadline, WhereverTheDeadlineStrikesTheAnswerIsValid) {
  const Graph g = testing::RandomLayered({.nodes = 80}, 80);  // above ilp.max_ops: fast
  const RematParams params = Defaults();
  const Bytes budget = NoRematPeak(g, params) * 85 / 100;
  int timed_out = 0;
  for (int k : {0, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89}) {
    SCOPED_TRACE("deadline after " + std::to_string(k) + " readings");
    auto readings = std::make_shared<int>(0);
    const Clock::time_point start = Clock::now();
    Deadline::Now now = [readings, start, k] {
      return (*readings)++ < k ? start : start + std::chrono::hours(1);
    };
    const RematResult r = PlanRemat(g, budget, params, Deadline(60, nullptr, now, start));
    EXPECT_EQ(ValidatePlan(r.rewritten.graph, r.plan), "");
    EXPECT_EQ(CheckFaithful(r.rewritten.graph, &g), "");
    if (r.feasible) {
      EXPECT_LE(r.plan.summary.actual_peak, budget);
    } else {
      EXPECT_TRUE(r.status == Status::kTimeLimit || r.status == Status::kInfeasible) << r.status;
    }
    if (r.timed_out) ++timed_out;
    if (!r.feasible && r.timed_out) {
      EXPECT_EQ(r.status, Status::kTimeLimit);
    }
  }
  EXPECT_GT(timed_out, 0);
}

// The report says the time limit struck exactly where it did, wherever in the plan: also where
// the plan kept is of a search that ended before a later one (a builder of fit.alone, a start
// order) was cut short. The deadline strikes after the k-th of the R looks a whole plan takes.
TEST(RematDeadline, TheReportSaysTheTimeLimitStruckWhereverItStruck) {
  const Graph g = testing::RandomLayered({.nodes = 80}, 80);
  const RematParams params = Defaults();
  const Bytes budget = NoRematPeak(g, params) * 90 / 100;
  auto count = std::make_shared<int>(0);
  const Clock::time_point start = Clock::now();
  const Deadline::Now counting = [count, start] {
    ++*count;
    return start;
  };
  const RematResult whole = PlanRemat(g, budget, params, Deadline(60, nullptr, counting, start));
  ASSERT_FALSE(whole.timed_out);
  int feasible = 0;
  for (int k = 0; k <= *count; k += std::max(1, *count / 40)) {
    SCOPED_TRACE("deadline after " + std::to_string(k) + " readings");
    auto readings = std::make_shared<int>(0);
    Deadline::Now now = [readings, start, k] {
      return (*readings)++ < k ? start : start + std::chrono::hours(1);
    };
    const RematResult r = PlanRemat(g, budget, params, Deadline(60, nullptr, now, start));
    EXPECT_EQ(r.timed_out, *readings > k);
    if (r.feasible) ++feasible;
  }
  EXPECT_GT(feasible, 0);  // struck after the plan had fitted, too
}

// Where a method runs to the time limit, the schedule it returns is still laid out with the
// search: the methods stop fit.layout_reserve of the time left before it. On random-layered-40
// at 80% the exact method's MILP has about a minute of work, so a 4 s limit cuts it short
// wherever this runs; its warm start is within the budget by its theoretical peak, and best-fit
// and llfb alone lay it out above the budget (800 B against 757), which the search does not.
// With no reserve the plan was reported out of reach.
TEST(RematDeadline, ASchedulePastWhichTheMethodsRanOutOfTimeIsStillLaidOutWithTheSearch) {
  const Graph g = testing::RandomLayered({.nodes = 40}, 40);
  RematParams params = Defaults();
  params.time_limit_s = 4;  // the builders take 0.1 s, 0.3 s in a sanitizer build
  const Bytes budget = NoRematPeak(g, params) * 80 / 100;
  const RematResult r = PlanRemat(g, budget, params);
  EXPECT_TRUE(r.feasible) << r.status << ", arena " << r.plan.summary.actual_peak;
  EXPECT_LE(r.plan.summary.actual_peak, budget);
  EXPECT_EQ(ValidatePlan(r.rewritten.graph, r.plan), "");
  EXPECT_EQ(r.method, "ilp");  // the exact method ran, and was cut short
  EXPECT_EQ(r.status, Status::kTimeLimit);

  params.fit.layout_reserve = 0;  // the methods run to the limit itself
  const RematResult unreserved = PlanRemat(g, budget, params);
  EXPECT_FALSE(unreserved.feasible);
  EXPECT_TRUE(unreserved.timed_out);
  EXPECT_GT(unreserved.plan.summary.theoretical_peak, 0);
  EXPECT_LE(unreserved.plan.summary.theoretical_peak, budget);  // what the search would fit
}

// The compute lower bound, which runs before the methods, takes at most
// overhead_bound.time_share of the time left, so that the methods and the layout, which make
// the plan, keep the rest. Six GPT-2 XL layers at half their arena, RNG state kept, with the
// bound's work unlimited: its MILP does not close in minutes, so with all the time left it ran
// to the limit and nothing was planned. The plan alone takes about a second (release build).
TEST(RematDeadline, TheBoundLeavesTheMethodsAndTheLayoutTheRestOfTheTime) {
  const gen::Config config = config::ParseConfig(
      "model: {family: gpt2, n_layer: 6, n_embd: 1600, n_head: 25, seq_len: 1024, vocab: 50257, "
      "batch: 1, dropout: 0.1, tie_embeddings: true}\ntraining: {optimizer: adam}\n",
      "<test>");
  const Graph g = gen::GenerateGraph(config);
  RematParams params;
  params.rule.rng_state_kept = true;
  params.overhead_bound.max_nodes = 0;  // no work limit: the bound runs to its time
  params.overhead_bound.max_lp_iterations = 0;
  params.overhead_bound.time_limit_s = 1000;
  // The bound then takes 7.5 s; the plan 1.3 s of the rest in a release build, 7 s under ASan.
  params.time_limit_s = 30;
  const Bytes budget = NoRematPeak(g, params) / 2;
  const RematResult r = PlanRemat(g, budget, params);
  EXPECT_TRUE(r.feasible) << r.status << ", arena " << r.plan.summary.actual_peak;
  EXPECT_LE(r.plan.summary.actual_peak, budget);
  EXPECT_EQ(ValidatePlan(r.rewritten.graph, r.plan), "");
  EXPECT_GT(r.lower_bound, 0);  // the bound had its share, and proved something in it

  params.overhead_bound.time_share = 1.5;
  EXPECT_THROW(PlanRemat(g, budget, params), InputError);
  params.overhead_bound.time_share = 0;
  EXPECT_THROW(PlanRemat(g, budget, params), InputError);
}

TEST(RematDeadline, TheLayoutReserveIsAShareBelowOne) {
  const Graph g = testing::RandomLayered({.nodes = 10}, 10);
  for (double reserve : {-0.1, 1.0, std::numeric_limits<double>::quiet_NaN()}) {
    RematParams params = Defaults();
    params.fit.layout_reserve = reserve;
    EXPECT_THROW(PlanRemat(g, NoRematPeak(g, params), params), std::exception) << reserve;
  }
}

// A schedule that meets the compute lower bound is optimal: the improvers after it, the exact
// method's MILP among them, are not run (its solver call stays empty), and the plan is the
// same as when they run.
TEST(RematDeadline, APlanThatMeetsItsLowerBoundEndsTheSearch) {
  int proven = 0;
  for (const Graph& g : testing::TinyRematGraphs(5)) {
    RematParams params = Defaults();
    const Bytes no_remat = NoRematPeak(g, params);
    for (Bytes budget = no_remat; budget >= no_remat * 6 / 10 && budget > 0; --budget) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const RematResult r = PlanRemat(g, budget, params);
      if (!r.feasible || r.status != Status::kOptimal || r.solver.size() > 0) continue;
      if (r.compute_overhead > r.lower_bound * (1 + 2e-6)) continue;  // the exact method's
      ++proven;
      RematParams unbounded = params;
      unbounded.overhead_bound.cuts = 0;  // no bound: every improver runs
      const RematResult all = PlanRemat(g, budget, unbounded);
      EXPECT_TRUE(all.feasible);
      EXPECT_NEAR(all.compute_overhead, r.compute_overhead, 1e-9);
    }
  }
  EXPECT_GT(proven, 0);
}

// fit.by "theoretical": the budget bounds the sum of live bytes (MOCCASIN's accounting), not
// the arena. Against brute force on tiny graphs: a plan said to fit has its theoretical peak
// within the budget and, where its schedule lies in brute force's space, costs no less than
// the cheapest schedule there; a budget the arena meets is met by the theoretical peak too; and
// the result says what it measured.
TEST(RematFitBy, TheTheoreticalPeakAgainstBruteForce) {
  for (const Graph& g : testing::TinyRematGraphs(3)) {
    RematParams arena = Defaults(), theoretical = Defaults();
    theoretical.fit.by = "theoretical";
    const Bytes no_remat = NoRematPeak(g, arena);
    for (Bytes budget = no_remat; budget >= no_remat / 2 && budget > 0; --budget) {
      SCOPED_TRACE(g.name + " budget " + std::to_string(budget));
      const RematResult a = PlanRemat(g, budget, arena);
      const RematResult t = PlanRemat(g, budget, theoretical);
      EXPECT_EQ(a.fit_by, "arena");
      EXPECT_EQ(t.fit_by, "theoretical");
      EXPECT_EQ(ValidatePlan(t.rewritten.graph, t.plan), "");
      EXPECT_EQ(t.feasible, t.plan.summary.theoretical_peak <= budget);
      if (a.feasible) {
        EXPECT_TRUE(t.feasible);
      }
      if (!t.feasible) continue;
      int recomputations = static_cast<int>(t.schedule.size()) - g.num_ops();
      if (recomputations <= 2) {
        EXPECT_GE(t.recompute_cost, testing::BruteForceCost(g, budget, 2) - 1e-9);
      }
    }
  }
}

TEST(RematFitBy, AnUnknownMeasureIsAnInputError) {
  const Graph g = testing::RandomLayered({.nodes = 10}, 10);
  RematParams params = Defaults();
  params.fit.by = "offsets";
  EXPECT_THROW(PlanRemat(g, NoRematPeak(g, params), params), std::exception);
}

}  // namespace
}  // namespace roam::remat
