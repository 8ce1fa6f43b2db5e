// What a subgraph tree holds, counted and as JSON: the figures `roam partition` prints.
//
// In: the graph, its memory model and a SubgraphTree (partition.h). Out: TreeCounts (ops by
// role, delayed branches, leaves over the node limit, the tree order's peak and every leaf's
// peak with boundary memory) and the tree as one JSON object (docs/partition.md, "JSON").
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "partition/partition.h"

namespace roam {

struct TreeCounts {
  int spine = 0, floating_sources = 0, floating_sinks = 0, floating_bridges = 0;
  int weight_update_ops = 0;
  int delayed_branches = 0;      // weight-update branches placed after their earliest segment
  int leaves_over_limit = 0;     // single segments larger than the node limit
  Bytes peak = 0;                // theoretical peak of tree.order
  std::vector<Bytes> leaf_peak;  // per leaf: SubgraphPeak of its ops in tree order
};

TreeCounts CountTree(const Graph& graph, const MemoryModel& model, const SubgraphTree& tree);

// Ops are named by their external ids, as in the graph file.
nlohmann::ordered_json TreeToJson(const Graph& graph, const SubgraphTree& tree,
                                  const TreeCounts& counts);

// Storages of a leaf by crossing (core/subgraph.h), count and bytes, indexed by Crossing.
struct CrossingCounts {
  int count[4] = {0, 0, 0, 0};
  Bytes bytes[4] = {0, 0, 0, 0};
};
CrossingCounts CountCrossings(const Leaf& leaf);

}  // namespace roam
