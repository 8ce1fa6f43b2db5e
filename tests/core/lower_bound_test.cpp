#include "core/lower_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "core/types.h"
#include "tests/support/random_graph.h"

namespace roam {
namespace {

// The bound's claim, checked literally: in every topological order, every storage counted at
// op v is resident at v's step; so the bound never exceeds the best order's peak.
TEST(CertifiedLowerBound, EveryCountedStorageIsLiveInEveryOrderOnRandomDags) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 150; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 2 + trial % 7;
    const Graph graph = testing::RandomGraph(rng, options);
    const MemoryModel model = BuildMemoryModel(graph, 1 + trial % 3);
    const Dependencies deps = BuildDependencies(graph);
    const ForcedResidency forced = CertifiedLowerBound(graph, model, deps);
    std::vector<OpId> all(U(graph.num_ops()));
    std::iota(all.begin(), all.end(), 0);
    const std::vector<Bytes> per_op = ForcedBytes(graph, model, deps, all);
    Bytes best = std::numeric_limits<Bytes>::max();
    testing::ForEachTopologicalOrder(graph, [&](const std::vector<OpId>& order) {
      const auto life = ComputeLifetimes(graph, model, order);
      const auto profile = MemoryProfile(model, life, graph.num_ops());
      for (Step step = 0; step < graph.num_ops(); ++step)
        ASSERT_LE(per_op[U(order[U(step)])], profile[U(step)]) << "trial " << trial;
      best = std::min(best, TheoreticalPeak(graph, model, order));
    });
    EXPECT_LE(forced.bound, best) << "trial " << trial;
    if (graph.num_ops() > 0) {
      EXPECT_EQ(forced.per_op[U(forced.at)], forced.bound);
    }
  }
}

// On a chain there is one order, and the bound is its peak.
TEST(CertifiedLowerBound, IsExactOnAChain) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 1 + trial % 8;
    options.max_inputs = 1;
    const Graph graph = testing::RandomGraph(rng, options);
    const Dependencies deps = BuildDependencies(graph);
    std::vector<OpId> only;
    int orders = 0;
    testing::ForEachTopologicalOrder(graph, [&](const std::vector<OpId>& o) {
      ++orders;
      only = o;
    });
    if (orders != 1) continue;
    const MemoryModel model = BuildMemoryModel(graph, 1);
    EXPECT_EQ(CertifiedLowerBound(graph, model, deps).bound, TheoreticalPeak(graph, model, only));
  }
}

// Two independent producer/consumer pairs: an order can run them one after the other, so only
// one of the two tensors is forced at any op.
TEST(CertifiedLowerBound, DoesNotCountTensorsThatAnOrderCanKeepApart) {
  Graph g;
  g.name = "pairs";
  for (int i = 0; i < 4; ++i) {
    Op op;
    op.ext_id = i;
    op.name = "op";
    g.ops.push_back(op);
  }
  auto tensor = [&](Bytes size, OpId producer, std::vector<OpId> consumers) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(g.tensors.size());
    t.size = size;
    t.producer = producer;
    t.consumers = std::move(consumers);
    g.tensors.push_back(t);
  };
  tensor(100, 0, {1});
  tensor(70, 2, {3});
  Finalize(g, "pairs");
  const MemoryModel model = BuildMemoryModel(g, 1);
  const ForcedResidency forced = CertifiedLowerBound(g, model, BuildDependencies(g));
  EXPECT_EQ(forced.bound, 100);
  EXPECT_EQ(ForcedBytes(g, model, BuildDependencies(g), std::vector<OpId>{0, 1, 2, 3}),
            (std::vector<Bytes>{100, 100, 70, 70}));
}

// The pruned search (ops in decreasing order of an upper bound, 64 per pass, until none left
// can beat the best) finds the same maximum as evaluating every op, on DAGs large enough to
// take many passes; cut short by max_evaluated it stays a valid bound and says it is not exact.
TEST(CertifiedLowerBound, PrunedSearchFindsTheMaximumOfEveryOp) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 30; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 50 + 37 * trial;
    const Graph graph = testing::RandomGraph(rng, options);
    const MemoryModel model = BuildMemoryModel(graph, 1);
    const Dependencies deps = BuildDependencies(graph);
    std::vector<OpId> all(U(graph.num_ops()));
    std::iota(all.begin(), all.end(), 0);
    const std::vector<Bytes> per_op = ForcedBytes(graph, model, deps, all);
    const Bytes max = *std::max_element(per_op.begin(), per_op.end());
    const ForcedResidency forced = CertifiedLowerBound(graph, model, deps);
    EXPECT_TRUE(forced.exact);
    EXPECT_EQ(forced.bound, max) << "trial " << trial;
    EXPECT_EQ(per_op[U(forced.at)], forced.bound);
    for (OpId v = 0; v < graph.num_ops(); ++v) {
      EXPECT_LE(per_op[U(v)], forced.upper[U(v)]);
      if (forced.evaluated[U(v)]) {
        EXPECT_EQ(forced.per_op[U(v)], per_op[U(v)]);
      }
    }
    // evaluate_above: every op whose upper bound exceeds it is evaluated.
    ForcedParams above;
    above.evaluate_above = max / 2;
    const ForcedResidency wide = CertifiedLowerBound(graph, model, deps, above);
    for (OpId v = 0; v < graph.num_ops(); ++v)
      if (wide.upper[U(v)] > above.evaluate_above) {
        EXPECT_TRUE(wide.evaluated[U(v)]);
      }
    // A work bound of one pass: still a lower bound, no longer claimed exact unless it was.
    ForcedParams short_params;
    short_params.max_evaluated = 64;
    const ForcedResidency cut = CertifiedLowerBound(graph, model, deps, short_params);
    EXPECT_LE(cut.bound, max);
    EXPECT_LE(cut.num_evaluated, 64);
    if (cut.bound < max) {
      EXPECT_FALSE(cut.exact);
    }
  }
}

}  // namespace
}  // namespace roam
