// The greedy's incremental state against the full evaluation (Rewrite, memory model,
// lifetimes, profile) and CheckSchedule, under random recomputations of random training
// steps, in-place activations and optimizer updates included.
#include "remat/greedy_state.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "core/io.h"
#include "core/types.h"
#include "remat/internal.h"
#include "tests/support/state_writer_graph.h"
#include "tests/support/training_graph.h"

namespace roam::remat::detail {
namespace {

std::vector<double> Costs(const Graph& g) {
  std::vector<double> costs;
  for (OpId op = 0; op < g.num_ops(); ++op) costs.push_back(OpCost(g, op));
  return costs;
}

// A random training step, the seed picking its depth, optimizer, backward views of copied
// inputs and alignment, with what a state over it refers to.
struct RandomStep {
  static Graph Make(unsigned seed, std::mt19937_64& rng) {
    testing::TrainingGraphOptions o;
    o.layers = 2 + static_cast<int>(seed % 3);
    o.adam = seed % 2 == 0;
    o.view_again_prob = seed % 4 < 2 ? 0.7 : 0.0;
    return testing::TrainingLikeGraph(rng, o);
  }
  static RematParams Params(unsigned seed) {
    RematParams params;
    params.alignment = seed % 3 == 0 ? 1 : 64;
    return params;
  }
  RandomStep(unsigned seed, std::mt19937_64& rng)
      : g(Make(seed, rng)),
        params(Params(seed)),
        model(BuildMemoryModel(g, params.alignment)),
        costs(Costs(g)) {}

  const Graph g;
  const RematParams params;
  const MemoryModel model;
  const std::vector<double> costs;
};

// Up to three ops computed before a random step, in schedule order, copied before it.
std::pair<Step, std::vector<OpId>> RandomCopies(const Schedule& schedule, std::mt19937_64& rng) {
  const Step at = std::uniform_int_distribution<Step>(1, static_cast<Step>(schedule.size()))(rng);
  std::vector<Step> from;
  const int chain = 1 + static_cast<int>(rng() % 3);
  for (int i = 0; i < chain; ++i) from.push_back(static_cast<Step>(rng() % U(at)));
  std::sort(from.begin(), from.end());
  from.erase(std::unique(from.begin(), from.end()), from.end());
  std::vector<OpId> ops;
  for (Step x : from) ops.push_back(schedule[U(x)]);
  return {at, ops};
}

TEST(GreedyState, InsertKeepsTheProfileAndValidityOfTheFullEvaluation) {
  int accepted = 0, rejected = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    const RandomStep step(seed, rng);
    const auto& [g, params, model, costs] = step;
    GreedyState state(g, model, costs, params.rule);
    Schedule schedule(g.program_order.begin(), g.program_order.end());
    ASSERT_TRUE(state.Reset(schedule));
    // A second state, now and then assigned from the first and otherwise given the same
    // inserts: an assignment reuses the buffers of a state of another length and copies.
    GreedyState assigned(g, model, costs, params.rule);
    ASSERT_TRUE(assigned.Reset(schedule));
    for (int round = 0; round < 40; ++round) {
      const auto [at, ops] = RandomCopies(schedule, rng);
      Schedule next = schedule;
      next.insert(next.begin() + at, ops.begin(), ops.end());
      const bool valid = CheckSchedule(g, next, params.rule).empty();
      SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round));
      EXPECT_EQ(state.CanInsert(at, ops) || !valid, true);  // never refuses a valid one
      const bool inserted = state.Insert(at, ops);
      ASSERT_EQ(inserted, valid) << CheckSchedule(g, next, params.rule);
      if (!valid) {
        ++rejected;
        ASSERT_TRUE(state.Reset(schedule));
        continue;
      }
      ++accepted;
      if (round % 5 == 4)
        assigned = state;
      else
        ASSERT_TRUE(assigned.Insert(at, ops));
      schedule = std::move(next);
      const Evaluated e = Evaluate(g, schedule, params);
      ASSERT_EQ(state.schedule(), schedule);
      ASSERT_EQ(state.Profile(), e.profile);
      ASSERT_EQ(assigned.schedule(), schedule);
      ASSERT_EQ(assigned.Profile(), e.profile);
      EXPECT_EQ(assigned.PeakStep(), e.peak_step);
      EXPECT_EQ(state.Peak(), e.peak);
      EXPECT_EQ(state.PeakStep(), e.peak_step);
      EXPECT_EQ(state.RecomputeCost(), e.recompute_cost);
      // A fresh state built from the schedule agrees too.
      GreedyState fresh(g, model, costs, params.rule);
      ASSERT_TRUE(fresh.Reset(schedule));
      EXPECT_EQ(fresh.Profile(), e.profile);
    }
  }
  // Both outcomes were exercised.
  EXPECT_GT(accepted, 100);
  EXPECT_GT(rejected, 20);
}

// Removing runs of copies (the prune's and the swap search's trials) gives the state a Reset
// of the shorter schedule would build, accepts exactly the schedules CheckSchedule accepts,
// refuses a run holding an original without changing anything, and Insert undoes it.
TEST(GreedyState, RemoveAgreesWithTheFullEvaluationAndInsertUndoesIt) {
  int removed = 0, refused = 0, invalid = 0;
  for (unsigned seed = 1; seed <= 60; ++seed) {
    std::mt19937_64 rng(seed);
    const RandomStep step(seed, rng);
    const auto& [g, params, model, costs] = step;
    GreedyState state(g, model, costs, params.rule);
    Schedule schedule(g.program_order.begin(), g.program_order.end());
    ASSERT_TRUE(state.Reset(schedule));
    // Copies first: random valid insertions of up to three ops, nested runs included.
    for (int round = 0; round < 60; ++round) {
      const auto [at, ops] = RandomCopies(schedule, rng);
      Schedule next = schedule;
      next.insert(next.begin() + at, ops.begin(), ops.end());
      if (!CheckSchedule(g, next, params.rule).empty()) continue;
      ASSERT_TRUE(state.Insert(at, ops));
      schedule = std::move(next);
    }
    for (int round = 0; round < 40; ++round) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " round " + std::to_string(round));
      std::vector<char> seen(U(g.num_ops()), 0), copy(schedule.size(), 0);
      std::vector<Step> copies;
      for (size_t x = 0; x < schedule.size(); ++x) {
        copy[x] = seen[U(schedule[x])];
        seen[U(schedule[x])] = 1;
        if (copy[x]) copies.push_back(static_cast<Step>(x));
      }
      if (copies.empty()) break;
      // A run of one to three steps from a copy; now and then one step earlier, maybe an
      // original.
      Step at = copies[rng() % copies.size()];
      const auto k = static_cast<Step>(
          std::min<size_t>(1 + rng() % 3, schedule.size() - static_cast<size_t>(at)));
      if (rng() % 8 == 0 && at > 0) --at;
      bool all_copies = true;
      for (Step x = at; x < at + k; ++x) all_copies = all_copies && copy[U(x)];
      Schedule next = schedule;
      next.erase(next.begin() + at, next.begin() + at + k);
      const std::string problem = CheckSchedule(g, next, params.rule);
      const std::vector<OpId> taken(schedule.begin() + at, schedule.begin() + at + k);
      const bool ok = state.Remove(at, k);
      if (!all_copies) {
        ++refused;
        ASSERT_FALSE(ok);
        ASSERT_EQ(state.schedule(), schedule);  // unchanged and usable
        ASSERT_EQ(state.Profile(), Evaluate(g, schedule, params).profile);
        continue;
      }
      ASSERT_EQ(ok, problem.empty()) << problem;
      if (!ok) {
        ++invalid;
        ASSERT_TRUE(state.Reset(schedule));
        continue;
      }
      ++removed;
      const Evaluated e = Evaluate(g, next, params);
      ASSERT_EQ(state.schedule(), next);
      ASSERT_EQ(state.Profile(), e.profile);
      EXPECT_EQ(state.Peak(), e.peak);
      EXPECT_EQ(state.PeakStep(), e.peak_step);
      EXPECT_NEAR(state.RecomputeCost(), e.recompute_cost, 1e-12);
      if (round % 2 == 0) {  // undone: the schedule before, as evaluated
        ASSERT_TRUE(state.Insert(at, taken));
        ASSERT_EQ(state.schedule(), schedule);
        ASSERT_EQ(state.Profile(), Evaluate(g, schedule, params).profile);
      } else {
        schedule = std::move(next);
      }
    }
  }
  EXPECT_GT(removed, 1000);
  EXPECT_GT(refused, 100);
  EXPECT_GT(invalid, 5);
}

// A batch norm's copy leaves the running-statistics update out (IsSkippedStateUpdate): the
// state gives each copy exactly the outputs Rewrite gives it, so no copy's value lands on the
// statistics' storage, whether built from the schedule or by inserting the copy.
TEST(GreedyState, ABatchNormCopyMakesOnlyTheOutputsRewriteGivesIt) {
  const testing::StateWriterGraph s = testing::MakeStateWriterGraph("aten.native_batch_norm");
  const Graph& g = s.g;
  RematParams params;
  const MemoryModel model = BuildMemoryModel(g, params.alignment);
  const std::vector<double> costs = Costs(g);
  const Schedule base = {s.writer, s.t, s.relu, s.use};
  const Schedule schedule = {s.writer, s.t, s.relu, s.writer, s.use};
  ASSERT_EQ(CheckSchedule(g, schedule, params.rule), "");
  const Rewritten rw = Rewrite(g, schedule, params.rule);
  GreedyState fresh(g, model, costs, params.rule);
  ASSERT_TRUE(fresh.Reset(schedule));
  GreedyState inserted(g, model, costs, params.rule);
  ASSERT_TRUE(inserted.Reset(base));
  ASSERT_TRUE(inserted.Insert(3, std::span<const OpId>(&s.writer, 1)));
  ASSERT_EQ(inserted.schedule(), schedule);
  const int statistics = model.storage_of[U(s.update)];
  for (GreedyState* state : {&fresh, &inserted}) {
    for (size_t pos = 0; pos < schedule.size(); ++pos)
      EXPECT_EQ(state->OutputsAt(static_cast<Step>(pos)).size(),
                rw.graph.ops[U(rw.order[pos])].outputs.size())
          << "step " << pos;
    for (int v : state->Members(statistics))
      EXPECT_NE(state->ProducerStep(v), 3) << "the copy writes the running statistics";
    EXPECT_EQ(state->Members(statistics).size(), 2u);  // mean and the original's update
    EXPECT_EQ(state->Profile(), Evaluate(g, schedule, params).profile);
  }
}

TEST(GreedyState, ResetRejectsWhatCheckScheduleRejects) {
  const Graph tiny =
      LoadGraph(std::string(std::getenv("ROAM_SOURCE_DIR") ? std::getenv("ROAM_SOURCE_DIR") : ".") +
                "/tests/data/tiny.graph.json");
  const MemoryModel model = BuildMemoryModel(tiny, 1);
  const std::vector<double> costs = Costs(tiny);
  GreedyState state(tiny, model, costs, {});
  for (const Schedule& s :
       {Schedule{0, 1, 2, 3, 4}, Schedule{0, 1, 1, 2, 3, 4}, Schedule{0, 1, 2, 0, 1, 3, 4},
        Schedule{0, 1, 2, 3, 4, 0}, Schedule{0, 1, 2, 3, 4, 4}, Schedule{1, 0, 2, 3, 4},
        Schedule{0, 1, 2, 3}})
    EXPECT_EQ(state.Reset(s), CheckSchedule(tiny, s).empty()) << ::testing::PrintToString(s);
}

}  // namespace
}  // namespace roam::remat::detail
