// The order ILP against brute force over all topological orders, on whole graphs and on
// windows with boundary storages, single- and multi-stream.
#include "ilp/order_ilp.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <random>

#include "tests/support/random_graph.h"

namespace roam::ilp {
namespace {

using testing::BruteForceMinPeak;
using testing::RandomGraph;
using testing::RandomGraphOptions;

// Minimum SubgraphPeak over the topological orders of a subgraph's ops.
Bytes BruteForceSubgraphPeak(const Graph& graph, const MemoryModel& model, const Subgraph& sub) {
  Dependencies deps = BuildDependencies(graph);
  std::vector<OpId> ops = sub.ops;
  std::sort(ops.begin(), ops.end());
  Bytes best = std::numeric_limits<Bytes>::max();
  do {
    std::vector<int> pos(size_t(graph.num_ops()), -1);
    for (size_t k = 0; k < ops.size(); ++k) pos[size_t(ops[k])] = static_cast<int>(k);
    bool topological = true;
    for (OpId op : ops)
      for (OpId p : deps.Preds(op))
        if (pos[size_t(p)] >= 0 && pos[size_t(p)] > pos[size_t(op)]) topological = false;
    if (topological) best = std::min(best, SubgraphPeak(graph, model, sub, ops));
  } while (std::next_permutation(ops.begin(), ops.end()));
  return best;
}

void ExpectValid(const Graph& graph, const OrderIlpResult& r, const Subgraph& sub) {
  std::vector<OpId> sorted = r.order, expected = sub.ops;
  std::sort(sorted.begin(), sorted.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(sorted, expected);
  Dependencies deps = BuildDependencies(graph);
  std::vector<int> pos(size_t(graph.num_ops()), -1);
  for (size_t k = 0; k < r.order.size(); ++k) pos[size_t(r.order[k])] = static_cast<int>(k);
  for (OpId op : r.order)
    for (OpId p : deps.Preds(op))
      if (pos[size_t(p)] >= 0) {
        EXPECT_LT(pos[size_t(p)], pos[size_t(op)]);
      }
}

TEST(OrderIlp, OptimumEqualsBruteForceOnRandomGraphs) {
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 80; ++trial) {
    RandomGraphOptions options;
    options.ops = 2 + trial % 7;
    Graph graph = RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph, trial % 2 ? 1 : 512);
    Dependencies deps = BuildDependencies(graph);
    OrderIlpResult r = SolveOrderIlp(graph, model, deps, WholeGraph(graph, model), {}, {});
    ASSERT_EQ(CheckTopological(graph, deps, r.order), "") << "trial " << trial;
    EXPECT_EQ(r.status, ModelStatus::kOptimal) << "trial " << trial << ": " << r.note;
    const Bytes peak = TheoreticalPeak(graph, model, r.order);
    EXPECT_EQ(r.peak, peak) << "trial " << trial;
    EXPECT_EQ(r.objective, peak) << "trial " << trial;
    EXPECT_EQ(r.lower_bound, peak) << "trial " << trial;
    EXPECT_EQ(peak, BruteForceMinPeak(graph, model)) << "trial " << trial;
    EXPECT_LE(peak, r.warm_start_peak);
    EXPECT_EQ(r.warm_start_peak, TheoreticalPeak(graph, model, graph.program_order));
  }
}

TEST(OrderIlp, ReductionsDoNotChangeTheOptimum) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 40; ++trial) {
    RandomGraphOptions options;
    options.ops = 8;
    options.alias_prob = 0.4;  // many view ops to contract
    Graph graph = RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph, 1);
    Dependencies deps = BuildDependencies(graph);
    OrderIlpParams plain;
    plain.contract = false;
    plain.symmetry_breaking = false;
    OrderIlpResult reduced = SolveOrderIlp(graph, model, deps, WholeGraph(graph, model), {}, {});
    OrderIlpResult full = SolveOrderIlp(graph, model, deps, WholeGraph(graph, model), {}, plain);
    EXPECT_EQ(reduced.peak, full.peak) << "trial " << trial;
    EXPECT_EQ(full.contracted, 0);
    EXPECT_EQ(full.nodes, graph.num_ops());
  }
}

TEST(OrderIlp, ContractsViewOpsIntoTheirProducer) {
  // a -> x (100 B); view op v makes y, an alias of x; c consumes y and makes z (50 B).
  Graph g;
  g.name = "views";
  for (int i = 0; i < 3; ++i) g.ops.push_back(Op{100 + i, "op", Phase::kForward, {}, {}});
  auto tensor = [&](Bytes size, OpId producer, std::vector<OpId> consumers, TensorId alias) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(g.tensors.size());
    t.size = size;
    t.producer = producer;
    t.consumers = std::move(consumers);
    t.alias_of = alias;
    g.tensors.push_back(t);
  };
  tensor(100, 0, {1}, kNoTensor);  // x
  tensor(100, 1, {2}, 0);          // y = view(x)
  tensor(50, 2, {}, kNoTensor);    // z
  Finalize(g, "views");
  MemoryModel model = BuildMemoryModel(g, 1);
  OrderIlpResult r = SolveOrderIlp(g, model, BuildDependencies(g), WholeGraph(g, model), {}, {});
  EXPECT_GE(r.contracted, 1);
  EXPECT_EQ(r.peak, 150);
  EXPECT_EQ(r.order, (std::vector<OpId>{0, 1, 2}));
}

TEST(OrderIlp, WindowPeaksComposeToTheWholeGraphPeak) {
  // ROAM eq 1: the peak of a concatenation is the maximum of the leaf peaks, with the
  // boundary storages counted in each leaf; re-ordering inside each leaf keeps it so.
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 40; ++trial) {
    RandomGraphOptions options;
    options.ops = 12;
    Graph graph = RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph, 1);
    Dependencies deps = BuildDependencies(graph);
    const std::vector<OpId>& order = graph.program_order;
    std::vector<int> cuts = {0, 3 + trial % 3, 8, 12};
    Bytes max_leaf = 0;
    std::vector<OpId> optimized;
    Bytes max_optimized = 0;
    for (size_t w = 0; w + 1 < cuts.size(); ++w) {
      Subgraph sub = OrderWindow(graph, model, order, cuts[w], cuts[w + 1]);
      std::vector<OpId> leaf(order.begin() + cuts[w], order.begin() + cuts[w + 1]);
      max_leaf = std::max(max_leaf, SubgraphPeak(graph, model, sub, leaf));
      OrderIlpResult r = SolveOrderIlp(graph, model, deps, sub, leaf, {});
      ExpectValid(graph, r, sub);
      EXPECT_EQ(r.status, ModelStatus::kOptimal);
      EXPECT_EQ(r.peak, r.objective) << "trial " << trial << " window " << w;
      EXPECT_EQ(r.peak, SubgraphPeak(graph, model, sub, r.order));
      if (cuts[w + 1] - cuts[w] <= 5) {
        EXPECT_EQ(r.peak, BruteForceSubgraphPeak(graph, model, sub)) << "trial " << trial;
      }
      optimized.insert(optimized.end(), r.order.begin(), r.order.end());
      max_optimized = std::max(max_optimized, r.peak);
    }
    EXPECT_EQ(max_leaf, TheoreticalPeak(graph, model, order)) << "trial " << trial;
    ASSERT_EQ(CheckTopological(graph, deps, optimized), "");
    EXPECT_EQ(max_optimized, TheoreticalPeak(graph, model, optimized)) << "trial " << trial;
  }
}

TEST(OrderIlp, RejectsASubgraphWhoseBoundaryIsIncomplete) {
  std::mt19937_64 rng(1);
  RandomGraphOptions options;
  options.ops = 8;
  options.alias_prob = 0;
  options.zero_prob = 0;
  Graph graph = RandomGraph(rng, options);
  MemoryModel model = BuildMemoryModel(graph, 1);
  Subgraph sub = OrderWindow(graph, model, graph.program_order, 4, 8);
  auto created_outside = [](const BoundaryStorage& b) {
    return b.crossing == Crossing::kCreatedOutsideFreedInside ||
           b.crossing == Crossing::kLiveThroughout;
  };
  ASSERT_TRUE(std::any_of(sub.storages.begin(), sub.storages.end(), created_outside));
  std::erase_if(sub.storages, created_outside);
  EXPECT_THROW(SolveOrderIlp(graph, model, BuildDependencies(graph), sub, {}, {}),
               std::invalid_argument);
}

TEST(OrderIlp, MultiStreamWithOneStepPerOpMatchesSingleStream) {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 30; ++trial) {
    RandomGraphOptions options;
    options.ops = 3 + trial % 5;
    Graph graph = RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph, 1);
    Dependencies deps = BuildDependencies(graph);
    Subgraph whole = WholeGraph(graph, model);
    OrderIlpParams params;
    params.multi_stream = true;
    OrderIlpResult r = SolveOrderIlp(graph, model, deps, whole, {}, params);
    ASSERT_EQ(CheckTopological(graph, deps, r.order), "");
    EXPECT_EQ(r.status, ModelStatus::kOptimal);
    EXPECT_EQ(r.objective, MultiStreamPeak(graph, model, whole, r.order, r.steps, graph.num_ops()));
    EXPECT_EQ(r.objective, BruteForceMinPeak(graph, model)) << "trial " << trial;
    EXPECT_LE(r.peak, r.objective);
  }
}

TEST(OrderIlp, MultiStreamWithFewStepsRunsOpsConcurrently) {
  std::mt19937_64 rng(29);
  for (int trial = 0; trial < 20; ++trial) {
    RandomGraphOptions options;
    options.ops = 7;
    Graph graph = RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph, 1);
    Dependencies deps = BuildDependencies(graph);
    // The fewest steps possible: the longest dependency chain.
    std::vector<int> depth(size_t(graph.num_ops()), 1);
    for (OpId op : graph.program_order)
      for (OpId p : deps.Preds(op))
        depth[size_t(op)] = std::max(depth[size_t(op)], depth[size_t(p)] + 1);
    const int steps = *std::max_element(depth.begin(), depth.end());
    OrderIlpParams params;
    params.multi_stream = true;
    params.multi_stream_steps = steps;
    Subgraph whole = WholeGraph(graph, model);
    OrderIlpResult r = SolveOrderIlp(graph, model, deps, whole, {}, params);
    ASSERT_EQ(CheckTopological(graph, deps, r.order), "");
    EXPECT_EQ(r.status, ModelStatus::kOptimal);
    EXPECT_EQ(r.objective, MultiStreamPeak(graph, model, whole, r.order, r.steps, steps));
    EXPECT_GE(r.objective, BruteForceMinPeak(graph, model));  // concurrency costs memory
    EXPECT_LE(r.peak, r.objective);
    for (Step s : r.steps) EXPECT_LT(s, steps);
  }
}

// MODeL-MS with a concurrency limit against every step assignment within the steps and limit.
TEST(OrderIlp, MultiStreamConcurrencyLimitMatchesBruteForce) {
  std::mt19937_64 rng(37);
  int checked = 0;
  for (int trial = 0; trial < 24; ++trial) {
    RandomGraphOptions options;
    options.ops = 4 + trial % 3;
    Graph graph = RandomGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph, 1);
    Dependencies deps = BuildDependencies(graph);
    Subgraph whole = WholeGraph(graph, model);
    const int n = graph.num_ops(), steps = n - 1, limit = 1 + trial % 2;
    // Brute force: each op (in program order) at a step after its predecessors', at most
    // `limit` ops per step.
    Bytes best = std::numeric_limits<Bytes>::max();
    std::vector<Step> step(size_t(n), -1);
    std::vector<int> load(size_t(steps), 0);
    std::function<void(int)> go = [&](int k) {
      if (k == n) {
        std::vector<OpId> ops(graph.program_order);
        std::vector<Step> at;
        for (OpId op : ops) at.push_back(step[size_t(op)]);
        best = std::min(best, MultiStreamPeak(graph, model, whole, ops, at, steps));
        return;
      }
      const OpId op = graph.program_order[size_t(k)];
      Step lo = 0;
      for (OpId p : deps.Preds(op)) lo = std::max(lo, step[size_t(p)] + 1);
      for (Step s = lo; s < steps; ++s) {
        if (load[size_t(s)] >= limit) continue;
        ++load[size_t(s)];
        step[size_t(op)] = s;
        go(k + 1);
        --load[size_t(s)];
      }
      step[size_t(op)] = -1;
    };
    go(0);
    if (best == std::numeric_limits<Bytes>::max()) continue;  // infeasible within the limit
    OrderIlpParams params;
    params.multi_stream = true;
    params.multi_stream_steps = steps;
    params.max_concurrency = limit;
    OrderIlpResult r;
    try {
      r = SolveOrderIlp(graph, model, deps, whole, {}, params);
    } catch (const std::invalid_argument&) {
      continue;  // fewer steps than the longest chain
    }
    ++checked;
    ASSERT_EQ(CheckTopological(graph, deps, r.order), "");
    std::vector<int> per_step(size_t(steps), 0);
    for (Step s : r.steps) EXPECT_LE(++per_step[size_t(s)], limit) << "trial " << trial;
    EXPECT_EQ(r.status, ModelStatus::kOptimal) << "trial " << trial;
    EXPECT_EQ(r.objective, MultiStreamPeak(graph, model, whole, r.order, r.steps, steps));
    EXPECT_EQ(r.objective, best) << "trial " << trial;
  }
  EXPECT_GT(checked, 8);
}

// A 150-op random graph whose order ILP GLPK does not close in a moment.
struct HardInstance {
  Graph graph;
  MemoryModel model;
  Dependencies deps;
};
HardInstance MakeHardInstance() {
  std::mt19937_64 rng(31);
  RandomGraphOptions options;
  options.ops = 150;
  options.max_inputs = 2;
  HardInstance hard{RandomGraph(rng, options), {}, {}};
  hard.model = BuildMemoryModel(hard.graph, 1);
  hard.deps = BuildDependencies(hard.graph);
  return hard;
}

TEST(OrderIlp, ATimeLimitedSolveReturnsAValidIncumbent) {
  const HardInstance hard = MakeHardInstance();
  const auto& [graph, model, deps] = hard;
  OrderIlpParams params;
  params.solve.time_limit_s = 0.02;
  OrderIlpResult r = SolveOrderIlp(graph, model, deps, WholeGraph(graph, model), {}, params);
  ASSERT_LT(r.lower_bound, r.peak) << "instance too easy for this test";
  EXPECT_EQ(r.status, ModelStatus::kFeasibleTimeLimit);
  ASSERT_EQ(CheckTopological(graph, deps, r.order), "");
  EXPECT_EQ(r.peak, TheoreticalPeak(graph, model, r.order));
  EXPECT_LE(r.peak, r.warm_start_peak);
  EXPECT_GT(r.gap, 0.0);
  EXPECT_LT(r.seconds, 10.0);
}

// Stopped by its work limit, the solve returns the same order and bound every time and says it
// was the work limit; so does a model over the nonzero cap, which is never built.
TEST(OrderIlp, AWorkLimitedSolveIsTheSameEveryTimeAndSaysSo) {
  const HardInstance hard = MakeHardInstance();
  const auto& [graph, model, deps] = hard;
  OrderIlpParams params;
  params.solve.time_limit_s = 600;  // an outer cap that never binds here
  params.solve.max_total_lp_iterations = 3000;
  const Subgraph whole = WholeGraph(graph, model);
  const OrderIlpResult first = SolveOrderIlp(graph, model, deps, whole, {}, params);
  const OrderIlpResult second = SolveOrderIlp(graph, model, deps, whole, {}, params);
  ASSERT_TRUE(first.model_built);
  EXPECT_TRUE(first.work_limited);
  EXPECT_EQ(first.status, ModelStatus::kFeasibleTimeLimit);
  EXPECT_GE(first.lp_iterations, 3000);
  EXPECT_EQ(first.lp_iterations, second.lp_iterations);
  EXPECT_EQ(first.bb_nodes, second.bb_nodes);
  EXPECT_EQ(first.order, second.order);
  EXPECT_EQ(first.lower_bound, second.lower_bound);
  ASSERT_EQ(CheckTopological(graph, deps, first.order), "");
  EXPECT_EQ(first.peak, TheoreticalPeak(graph, model, first.order));

  params.max_nonzeros = 1;
  const OrderIlpResult capped = SolveOrderIlp(graph, model, deps, whole, {}, params);
  EXPECT_FALSE(capped.model_built);
  EXPECT_TRUE(capped.work_limited);
  EXPECT_TRUE(capped.from_warm_start);
  EXPECT_EQ(capped.status, ModelStatus::kFeasibleTimeLimit);
}

}  // namespace
}  // namespace roam::ilp
