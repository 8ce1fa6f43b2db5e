// The orders remat starts from (remat/evaluate.cpp, StartOrder; docs/remat.md, "Weight updates
// in the start order"): the baseline order with its weight-update branches placed by the
// partition, taken only where that keeps its peak, and what it buys a recomputation on a
// small LLaMA, whose heuristic order holds its gradients to the end of the backward.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "baseline/orders.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/memory_model.h"
#include "core/plan.h"
#include "remat/context.h"
#include "remat/internal.h"
#include "remat/model.h"
#include "remat/remat.h"
#include "tests/support/layered_graph.h"
#include "tests/support/llama_tiny.h"

namespace roam::remat {
namespace {

using testing::LlamaTiny;

// Each placement gives a topological order of every op whose peak is at most the baseline
// order's; the default moves llama's weight updates, an empty list keeps the baseline order,
// and so does a graph without optimizer ops; by default (no placements) every order is kept.
TEST(StartOrder, PlacesWeightUpdatesWithoutRaisingThePeak) {
  const Graph g = LlamaTiny();
  RematParams params;
  const MemoryModel model = BuildMemoryModel(g, params.alignment);
  const Dependencies deps = BuildDependencies(g);
  for (const std::string base : {"heuristic", "program", "xla-list"}) {
    SCOPED_TRACE(base);
    const Schedule baseline = ScheduleOrder(base, g, model);
    const Bytes peak = TheoreticalPeak(g, model, baseline);
    for (const std::vector<std::string>& placements : std::vector<std::vector<std::string>>{
             {"when-ready"}, {"scheduled"}, {"split"}, {"at-end"}, {"when-ready", "scheduled"}}) {
      params.update_placements = placements;
      const Schedule order = detail::StartOrder(base, g, model, params);
      EXPECT_EQ(CheckTopological(g, deps, order), "");
      EXPECT_EQ(CheckSchedule(g, order, params.rule), "");
      EXPECT_LE(TheoreticalPeak(g, model, order), peak);
    }
    params.update_placements = {};
    EXPECT_EQ(detail::StartOrder(base, g, model, params), baseline);
  }
  const RematParams defaults;  // named: GCC 12 misreads a temporary's vectors as uninitialized
  params = defaults;
  EXPECT_EQ(NoRematPeak(g, params),
            TheoreticalPeak(g, model, ScheduleOrder("heuristic", g, model)));
  params.update_placements = {"when-ready", "scheduled"};  // as the LLaMA presets set it
  EXPECT_NE(detail::StartOrder("heuristic", g, model, params),
            ScheduleOrder("heuristic", g, model));
  EXPECT_EQ(detail::BaseSchedule(g, params), detail::StartOrder("heuristic", g, model, params));
  EXPECT_EQ(NoRematPeak(g, params), TheoreticalPeak(g, model, detail::BaseSchedule(g, params)));

  const Graph layered = testing::SmallLayered(3);
  const MemoryModel layered_model = BuildMemoryModel(layered, params.alignment);
  EXPECT_EQ(detail::StartOrder("heuristic", layered, layered_model, params),
            ScheduleOrder("heuristic", layered, layered_model));

  params.update_placements = {"nope"};
  EXPECT_THROW(PlanRemat(g, NoRematPeak(g, params), params), InputError);
}

// At 30% of its arena the greedy cannot fit llama-tiny from the heuristic order as it is (its
// weight gradients wait for their products at the end of the backward), and fits it from the
// same order with the updates run when ready: a valid, faithful plan within the budget.
TEST(StartOrder, UpdatesRunWhenReadyLetTheGreedyFitLlamaTinyAtThirtyPercent) {
  const Graph g = LlamaTiny();
  RematParams params;
  params.method = "greedy";
  params.update_placements = {"when-ready", "scheduled"};
  params.time_limit_s = 1e8;
  params.fit.search_time_limit_s = 1e6;
  params.greedy.swap_attempts = 0;
  params.greedy.prune_attempts = 20;
  params.overhead_bound.cuts = 0;
  RematParams as_given = params;
  as_given.update_placements = {};
  const Bytes reference = NoRematPeak(g, as_given);
  ASSERT_EQ(NoRematPeak(g, params), reference);
  const Bytes budget = reference * 3 / 10;

  const RematResult missed = PlanRemat(g, budget, as_given);
  EXPECT_FALSE(missed.feasible);
  const RematResult r = PlanRemat(g, budget, params);
  ASSERT_TRUE(r.feasible);
  EXPECT_LE(r.plan.summary.actual_peak, budget);
  EXPECT_EQ(ValidatePlan(r.rewritten.graph, r.plan), "");
  EXPECT_EQ(CheckFaithful(r.rewritten.graph, &g), "");
  EXPECT_GT(r.compute_overhead, 0);
}

// `best` as the greedy alone, from orders with llama's updates placed as its presets place them,
// bounded by work only: quick, and the same plan on any machine.
RematParams GreedyFromPlacedUpdates() {
  RematParams params;
  params.update_placements = {"when-ready", "scheduled"};
  params.time_limit_s = 1e8;
  params.fit.search_time_limit_s = 1e6;
  params.best = {{"greedy"}, {}, 1};
  params.greedy.swap_attempts = 0;
  params.greedy.prune_attempts = 20;
  params.overhead_bound.cuts = 0;
  return params;
}

// The plans from one order, from another, and from both (best keeping the better): each fits
// the budget, and the last is valid and faithful to g.
std::array<RematResult, 3> PlansFromEachAndBoth(const Graph& g, Bytes budget,
                                                const RematParams& one, const RematParams& other,
                                                const RematParams& both) {
  std::array<RematResult, 3> plans = {PlanRemat(g, budget, one), PlanRemat(g, budget, other),
                                      PlanRemat(g, budget, both)};
  for (const RematResult& r : plans) {
    EXPECT_TRUE(r.feasible);
    EXPECT_LE(r.plan.summary.actual_peak, budget);
  }
  EXPECT_EQ(ValidatePlan(plans[2].rewritten.graph, plans[2].plan), "");
  EXPECT_EQ(CheckFaithful(plans[2].rewritten.graph, &g), "");
  return plans;
}

// What the methods make of an order is not monotone in where its gradients wait: with `best`
// as the greedy alone, llama-tiny at 60% of its arena costs less from the heuristic order as it
// is than with its updates placed, and at 40% more. start_as_given runs best from both and
// keeps the cheaper plan at each budget.
TEST(StartOrder, StartAsGivenKeepsTheCheaperOfBothOrders) {
  const Graph g = LlamaTiny();
  RematParams params = GreedyFromPlacedUpdates();
  RematParams as_given = params, both = params;
  as_given.update_placements = {};
  both.start_as_given = true;
  const Bytes reference = NoRematPeak(g, params);
  int given_cheaper = 0, placed_cheaper = 0;
  for (int percent : {60, 40}) {
    SCOPED_TRACE(percent);
    const Bytes budget = reference * percent / 100;
    const auto [placed, given, r] = PlansFromEachAndBoth(g, budget, params, as_given, both);
    EXPECT_EQ(r.recompute_cost, std::min(placed.recompute_cost, given.recompute_cost));
    EXPECT_EQ(r.no_remat_peak, reference);
    given_cheaper += given.recompute_cost < placed.recompute_cost;
    placed_cheaper += placed.recompute_cost < given.recompute_cost;
  }
  EXPECT_EQ(given_cheaper, 1);
  EXPECT_EQ(placed_cheaper, 1);
}

// llama-tiny's program order (its updates placed) ties the heuristic order's peak, so as a start
// order it runs only with start_ties; then every other start is a distinct schedule at most at
// the base order's peak, listed once, ties after the lower ones.
TEST(StartOrder, StartTiesListsEachDistinctOrderAtTheBasePeak) {
  const Graph g = LlamaTiny();
  RematParams params;
  params.update_placements = {"when-ready", "scheduled"};
  const detail::Context without(g, params);
  EXPECT_TRUE(without.OtherStarts(params).empty());
  params.start_ties = true;
  const detail::Context ctx(g, params);
  const std::vector<detail::Context::Start>& starts = ctx.OtherStarts(params);
  ASSERT_FALSE(starts.empty());
  std::vector<std::string> names;
  for (std::size_t i = 0; i < starts.size(); ++i) {
    const detail::Context& c = *starts[i].context;
    names.push_back(starts[i].params.base_order);
    EXPECT_NE(c.start, ctx.start) << names.back();
    EXPECT_LE(c.no_remat_peak, ctx.no_remat_peak) << names.back();
    EXPECT_EQ(c.start, detail::StartOrder(names.back(), g, ctx.model, params));
    if (i > 0) {
      EXPECT_LE(starts[i - 1].context->no_remat_peak, c.no_remat_peak);
    }
    for (std::size_t j = 0; j < i; ++j) EXPECT_NE(starts[j].context->start, c.start);
  }
  EXPECT_NE(std::find(names.begin(), names.end(), "program"), names.end());
}

// With the greedy alone, llama-tiny costs less from its program order than from the heuristic
// order at the same peak; start_ties runs best from both and keeps the cheaper plan, whose
// budgets stay fractions of the base order's peak.
TEST(StartOrder, StartTiesKeepsTheCheaperOfTiedOrders) {
  const Graph g = LlamaTiny();
  RematParams params = GreedyFromPlacedUpdates();
  params.start_orders = {"program"};
  RematParams program = params, ties = params;
  program.base_order = "program";
  ties.start_ties = true;
  const Bytes reference = NoRematPeak(g, params);
  ASSERT_EQ(NoRematPeak(g, program), reference);
  for (int percent : {60, 40}) {
    SCOPED_TRACE(percent);
    const Bytes budget = reference * percent / 100;
    const auto [heuristic, from_program, r] =
        PlansFromEachAndBoth(g, budget, params, program, ties);
    EXPECT_LT(from_program.recompute_cost, heuristic.recompute_cost);
    EXPECT_EQ(r.recompute_cost, from_program.recompute_cost);
    EXPECT_EQ(r.start_order, "program");
    EXPECT_EQ(r.no_remat_peak, reference);
  }
}

}  // namespace
}  // namespace roam::remat
