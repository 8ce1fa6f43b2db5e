// Solves on TBB worker threads equal the same solves run one after another: GLPK keeps one
// environment per thread, and each problem lives and dies on one thread.
#include <gtest/gtest.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <random>

#include "ilp/layout_ilp.h"
#include "ilp/order_ilp.h"
#include "tests/support/random_graph.h"

// ThreadSanitizer suppressions for oneTBB live in tests/sanitizers/tsan_suppressions.cpp.

namespace roam::ilp {
namespace {

struct Outcome {
  std::vector<OpId> order;
  Bytes peak = 0;
  std::vector<Bytes> offsets;
  Bytes height = 0;
  bool operator==(const Outcome&) const = default;
};

struct Instance {
  Graph graph;
  MemoryModel model;
  Dependencies deps;
};

std::vector<Instance> MakeInstances(int count) {
  std::mt19937_64 rng(2024);
  std::vector<Instance> out;
  for (int i = 0; i < count; ++i) {
    testing::RandomGraphOptions options;
    options.ops = 10 + i % 6;
    Instance x;
    x.graph = testing::RandomGraph(rng, options);
    x.model = BuildMemoryModel(x.graph, 1);
    x.deps = BuildDependencies(x.graph);
    out.push_back(std::move(x));
  }
  return out;
}

Outcome Solve(const Instance& x) {
  Outcome o;
  OrderIlpResult r = SolveOrderIlp(x.graph, x.model, x.deps, WholeGraph(x.graph, x.model), {}, {});
  EXPECT_EQ(r.status, ModelStatus::kOptimal);
  o.order = r.order;
  o.peak = r.peak;
  auto intervals = PlannedIntervals(x.model, ComputeLifetimes(x.graph, x.model, r.order));
  LayoutIlpResult l = SolveLayoutIlp(intervals, 1, {});
  EXPECT_EQ(l.status, ModelStatus::kOptimal);
  o.offsets = l.offsets;
  o.height = l.height;
  return o;
}

// Everything the parallel body needs is handed over through this atomic, and the body
// captures nothing: Debian's libtbb is not built for ThreadSanitizer, so the synchronisation
// inside TBB's scheduler is invisible to it, while this hand-over is not.
struct Shared {
  const std::vector<Instance>* instances = nullptr;
  std::vector<Outcome>* results = nullptr;
  std::atomic<int> finished{0};
};
std::atomic<Shared*> shared_state{nullptr};
constexpr size_t kInstances = 24;

TEST(IlpConcurrency, ParallelSolvesEqualSequentialOnes) {
  const std::vector<Instance> instances = MakeInstances(static_cast<int>(kInstances));
  std::vector<Outcome> sequential;
  for (const Instance& x : instances) sequential.push_back(Solve(x));
  for (int round = 0; round < 2; ++round) {
    std::vector<Outcome> parallel(kInstances);
    Shared shared;
    shared.instances = &instances;
    shared.results = &parallel;
    shared_state.store(&shared, std::memory_order_release);
    tbb::task_arena arena(2);  // the machine allows one worker besides the caller
    arena.execute([] {
      tbb::parallel_for(size_t{0}, kInstances, [](size_t i) {
        Shared* s = shared_state.load(std::memory_order_acquire);
        (*s->results)[i] = Solve((*s->instances)[i]);
        s->finished.fetch_add(1, std::memory_order_acq_rel);
      });
    });
    ASSERT_EQ(shared.finished.load(std::memory_order_acquire), static_cast<int>(kInstances));
    for (size_t i = 0; i < kInstances; ++i)
      EXPECT_EQ(parallel[i], sequential[i]) << "instance " << i << " round " << round;
  }
}

}  // namespace
}  // namespace roam::ilp
