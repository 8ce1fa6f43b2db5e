// Memory-insensitive detection against a brute-force reachability oracle.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "core/types.h"
#include "partition/partition.h"
#include "tests/support/random_graph.h"
#include "tests/support/training_graph.h"

namespace roam {
namespace {

// Transitive closure of the subgraph induced by `members`, by DFS from every member.
std::vector<std::vector<char>> Reachability(const Dependencies& deps, int n,
                                            const std::vector<char>& members) {
  std::vector<std::vector<char>> reach(U(n), std::vector<char>(U(n), 0));
  for (OpId from = 0; from < n; ++from) {
    if (!members[U(from)]) continue;
    std::vector<OpId> stack{from};
    while (!stack.empty()) {
      OpId v = stack.back();
      stack.pop_back();
      for (OpId s : deps.Succs(v)) {
        if (!members[U(s)] || reach[U(from)][U(s)]) continue;
        reach[U(from)][U(s)] = 1;
        stack.push_back(s);
      }
    }
  }
  return reach;
}

// A uniformly shuffled Kahn order: any topological order, not just the program order.
std::vector<OpId> RandomTopologicalOrder(const Dependencies& deps, int n, std::mt19937_64& rng) {
  std::vector<int> missing(U(n));
  std::vector<OpId> ready, order;
  for (OpId op = 0; op < n; ++op) {
    missing[U(op)] = static_cast<int>(deps.Preds(op).size());
    if (missing[U(op)] == 0) ready.push_back(op);
  }
  while (!ready.empty()) {
    size_t pick = std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng);
    std::swap(ready[pick], ready.back());
    OpId op = ready.back();
    ready.pop_back();
    order.push_back(op);
    for (OpId s : deps.Succs(op))
      if (--missing[U(s)] == 0) ready.push_back(s);
  }
  return order;
}

void ExpectMatchesOracle(const Graph& graph, const std::vector<OpId>& full_order,
                         const std::vector<char>& members) {
  const int n = graph.num_ops();
  Dependencies deps = BuildDependencies(graph);
  std::vector<OpId> order;
  for (OpId op : full_order)
    if (members[U(op)]) order.push_back(op);
  auto reach = Reachability(deps, n, members);
  std::vector<char> got = MemoryInsensitivePositions(deps, order, n);
  ASSERT_EQ(got.size(), order.size());
  for (size_t p = 0; p < order.size(); ++p) {
    OpId v = order[p];
    bool related_to_all = true;
    for (OpId w : order)
      if (w != v && !reach[U(v)][U(w)] && !reach[U(w)][U(v)]) related_to_all = false;
    EXPECT_EQ(got[p] != 0, related_to_all) << "op " << v << " at position " << p;
  }
}

TEST(MemoryInsensitive, MatchesReachabilityOracleOnRandomDags) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 1 + trial % 40;
    options.max_inputs = 1 + trial % 3;
    Graph graph = testing::RandomGraph(rng, options);
    Dependencies deps = BuildDependencies(graph);
    std::vector<char> all(U(graph.num_ops()), 1);
    ExpectMatchesOracle(graph, graph.program_order, all);
    ExpectMatchesOracle(graph, RandomTopologicalOrder(deps, graph.num_ops(), rng), all);
  }
}

TEST(MemoryInsensitive, MatchesOracleOnInducedSubgraphs) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 200; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 2 + trial % 30;
    Graph graph = testing::RandomGraph(rng, options);
    std::vector<char> members(U(graph.num_ops()));
    for (char& m : members) m = std::uniform_int_distribution<int>(0, 3)(rng) != 0 ? 1 : 0;
    ExpectMatchesOracle(graph, graph.program_order, members);
  }
}

TEST(MemoryInsensitive, MatchesOracleOnTrainingLikeGraphs) {
  std::mt19937_64 rng(13);
  for (int trial = 0; trial < 20; ++trial) {
    testing::TrainingGraphOptions options;
    options.layers = 1 + trial % 5;
    Graph graph = testing::TrainingLikeGraph(rng, options);
    std::vector<char> all(U(graph.num_ops()), 1);
    ExpectMatchesOracle(graph, graph.program_order, all);
  }
}

// The classic cut test ("no edge jumps over the op") is wrong: here a->b jumps over v, yet v
// is related to both.
Graph Diamondish() {
  Graph graph;
  for (int i = 0; i < 3; ++i) graph.ops.push_back(Op{i, "op", Phase::kUnknown, {}, {}});
  auto edge = [&](OpId from, OpId to) {
    Tensor t;
    t.ext_id = graph.num_tensors();
    t.size = 8;
    t.producer = from;
    t.consumers = {to};
    graph.tensors.push_back(t);
  };
  edge(0, 1);  // a -> v
  edge(0, 2);  // a -> b
  edge(1, 2);  // v -> b
  Finalize(graph, "test");
  return graph;
}

TEST(MemoryInsensitive, AnEdgeJumpingOverAnOpDoesNotMakeItSensitive) {
  Graph graph = Diamondish();
  auto mi = MemoryInsensitivePositions(BuildDependencies(graph), graph.program_order, 3);
  EXPECT_EQ(mi, (std::vector<char>{1, 1, 1}));
}

TEST(MemoryInsensitive, TwoUnrelatedChainsHaveNone) {
  Graph graph;
  for (int i = 0; i < 6; ++i) graph.ops.push_back(Op{i, "op", Phase::kUnknown, {}, {}});
  for (int i : {0, 1, 3, 4}) {
    Tensor t;
    t.ext_id = i;
    t.size = 4;
    t.producer = i;
    t.consumers = {i + 1};
    graph.tensors.push_back(t);
  }
  graph.program_order = {0, 3, 1, 4, 2, 5};
  Finalize(graph, "test");
  auto mi = MemoryInsensitivePositions(BuildDependencies(graph), graph.program_order, 6);
  EXPECT_EQ(std::count(mi.begin(), mi.end(), 1), 0);
}

}  // namespace
}  // namespace roam
