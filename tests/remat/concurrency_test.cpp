// remat plans made on several threads at once (a library user's, or batch jobs'): a plan keeps
// no state beyond its own (the context, the memo, GLPK's environment per thread), so each
// thread's plan is, bit for bit, the plan made alone; CI runs this under ThreadSanitizer.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/plan.h"
#include "remat/remat.h"
#include "tests/support/layered_graph.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

struct Cell {
  Graph graph;
  Bytes budget;
};

TEST(RematConcurrency, PlansOnSeveralThreadsAreThePlansMadeAlone) {
  RematParams params;
  params.alignment = 1;
  params.time_limit_s = 1200;  // far above the work, also under sanitizers: bounded by work
  std::vector<Cell> cells;
  for (auto [seed, percent] : {std::pair{3u, 90}, std::pair{2u, 85}}) {
    Graph g = testing::RandomLayered({.nodes = 16}, seed);
    cells.push_back({g, NoRematPeak(g, params) * percent / 100});
  }
  std::mt19937_64 rng(5);
  Graph training = testing::TrainingLikeGraph(rng, {});
  cells.push_back({training, NoRematPeak(training, params) * 7 / 10});

  std::vector<RematResult> alone;
  for (const Cell& c : cells) alone.push_back(PlanRemat(c.graph, c.budget, params));
  for (const RematResult& r : alone) {
    // Plans that recompute, the exact method's GLPK solves among them: something to race on.
    ASSERT_TRUE(r.feasible);
    ASSERT_GT(r.recompute_cost, 0);
  }

  constexpr int kThreads = 3;
  std::vector<std::vector<RematResult>> results(kThreads);  // one slot per thread
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      // Each thread in another order, so that different plans overlap in time.
      for (size_t k = 0; k < cells.size(); ++k) {
        const Cell& c = cells[(k + static_cast<size_t>(t)) % cells.size()];
        results[static_cast<size_t>(t)].push_back(PlanRemat(c.graph, c.budget, params));
      }
    });
  for (std::thread& th : threads) th.join();

  for (int t = 0; t < kThreads; ++t)
    for (size_t k = 0; k < cells.size(); ++k) {
      const size_t i = (k + static_cast<size_t>(t)) % cells.size();
      SCOPED_TRACE("thread " + std::to_string(t) + ", cell " + std::to_string(i));
      const RematResult& r = results[static_cast<size_t>(t)][k];
      EXPECT_FALSE(r.timed_out);
      EXPECT_EQ(r.schedule, alone[i].schedule);
      EXPECT_EQ(r.plan.buffers, alone[i].plan.buffers);
      EXPECT_EQ(r.recompute_cost, alone[i].recompute_cost);
      EXPECT_EQ(r.status, alone[i].status);
      EXPECT_EQ(r.lower_bound, alone[i].lower_bound);
      EXPECT_EQ(r.method, alone[i].method);
    }
}

}  // namespace
}  // namespace roam::remat
