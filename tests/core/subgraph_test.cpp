#include "core/subgraph.h"

#include <gtest/gtest.h>

#include <random>

#include "tests/support/random_graph.h"

namespace roam {
namespace {

// ROAM eq 1: cutting an order into windows and taking the largest window peak (boundary memory
// included) gives the whole order's peak.
TEST(Subgraph, WindowPeaksOfAnOrderCombineToItsPeak) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 1 + trial % 12;
    const Graph graph = testing::RandomGraph(rng, options);
    const MemoryModel model = BuildMemoryModel(graph, 1 + trial % 4);
    const auto& order = graph.program_order;
    const int n = graph.num_ops();
    std::vector<int> cuts = {0};
    for (int p = 1; p < n; ++p)
      if (rng() % 3 == 0) cuts.push_back(p);
    cuts.push_back(n);
    Bytes max_window = 0;
    for (size_t w = 0; w + 1 < cuts.size(); ++w) {
      const Subgraph sub = OrderWindow(graph, model, order, cuts[w], cuts[w + 1]);
      max_window = std::max(max_window, SubgraphPeak(graph, model, sub, sub.ops));
    }
    EXPECT_EQ(max_window, TheoreticalPeak(graph, model, order)) << "trial " << trial;
    const Subgraph whole = WholeGraph(graph, model);
    EXPECT_EQ(SubgraphPeak(graph, model, whole, order), TheoreticalPeak(graph, model, order));
  }
}

TEST(Subgraph, PeakRejectsAnOpTouchingAStorageTheSubgraphDoesNotList) {
  std::mt19937_64 rng(5);
  testing::RandomGraphOptions options;
  options.ops = 6;
  options.zero_prob = 0;
  const Graph graph = testing::RandomGraph(rng, options);
  const MemoryModel model = BuildMemoryModel(graph, 1);
  Subgraph sub = WholeGraph(graph, model);
  ASSERT_FALSE(sub.storages.empty());
  sub.storages.pop_back();
  EXPECT_THROW(SubgraphPeak(graph, model, sub, sub.ops), std::invalid_argument);
}

}  // namespace
}  // namespace roam
