#include "tests/partition/invariants.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>

#include "core/types.h"

namespace roam::testing {
void CheckPartitionInvariants(const Graph& graph, const MemoryModel& model,
                              const SubgraphTree& tree, std::span<const OpId> input_order,
                              int node_limit) {
  const int n = graph.num_ops();
  const int nl = static_cast<int>(tree.leaves.size());
  Dependencies deps = BuildDependencies(graph);
  std::vector<Step> input_pos(U(n));
  for (size_t s = 0; s < input_order.size(); ++s)
    input_pos[U(input_order[s])] = static_cast<Step>(s);

  // Every op in exactly one leaf; the concatenation is the order, and it is topological.
  std::vector<int> seen(U(n), 0);
  std::vector<OpId> concatenated;
  for (int l = 0; l < nl; ++l) {
    const Leaf& leaf = tree.leaves[U(l)];
    ASSERT_FALSE(leaf.ops.empty());
    EXPECT_EQ(leaf.first_step, static_cast<Step>(concatenated.size()));
    for (size_t i = 0; i < leaf.ops.size(); ++i) {
      ++seen[U(leaf.ops[i])];
      EXPECT_EQ(tree.leaf_of_op[U(leaf.ops[i])], l);
      if (i > 0) {
        EXPECT_LT(input_pos[U(leaf.ops[i - 1])], input_pos[U(leaf.ops[i])]);
      }
    }
    concatenated.insert(concatenated.end(), leaf.ops.begin(), leaf.ops.end());
  }
  for (OpId op = 0; op < n; ++op) ASSERT_EQ(seen[U(op)], 1) << "op " << op;
  ASSERT_EQ(concatenated, tree.order);
  ASSERT_EQ(CheckTopological(graph, deps, tree.order), "");

  // Node limit: exceeded only by a leaf with no inner memory-insensitive op to split at.
  for (const Leaf& leaf : tree.leaves) {
    EXPECT_EQ(leaf.over_limit, static_cast<int>(leaf.ops.size()) > node_limit);
    if (leaf.over_limit) {
      auto mi = MemoryInsensitivePositions(deps, leaf.ops, n);
      for (size_t p = 1; p < mi.size(); ++p) EXPECT_FALSE(mi[p]) << "splittable at " << p;
    }
  }

  // Crossing classes from the lifetimes of the concatenated order; outputs are never freed.
  auto life = ComputeLifetimes(graph, model, tree.order);
  for (int l = 0; l < nl; ++l) {
    const Leaf& leaf = tree.leaves[U(l)];
    const Step b = leaf.first_step, e = b + static_cast<Step>(leaf.ops.size()) - 1;
    // Listed: the storages some op of the leaf touches; the untouched live-throughout ones
    // are only counted (core/subgraph.h).
    std::set<StorageId> touched;
    for (OpId op : leaf.ops)
      for (StorageId sid : model.Touches(op)) touched.insert(sid);
    std::map<StorageId, Crossing> expected;
    Bytes entry = 0, exit = 0, throughout = 0, untouched = 0;
    int untouched_count = 0;
    for (StorageId sid : model.planned) {
      const Storage& s = model.storages[U(sid)];
      const Step start = life[U(sid)].start;
      const Step end = s.output ? std::numeric_limits<Step>::max() : life[U(sid)].end;
      if (end < b || start > e) continue;
      Crossing c = start >= b ? (end <= e ? Crossing::kInner : Crossing::kCreatedInsideFreedOutside)
                              : (end <= e ? Crossing::kCreatedOutsideFreedInside
                                          : Crossing::kLiveThroughout);
      if (touched.count(sid) > 0) {
        expected[sid] = c;
      } else {
        EXPECT_EQ(c, Crossing::kLiveThroughout) << "storage " << sid << " in leaf " << l;
        untouched += s.size;
        ++untouched_count;
      }
      if (start < b) entry += s.size;
      if (end > e) exit += s.size;
      if (start < b && end > e) throughout += s.size;
    }
    std::map<StorageId, Crossing> got;
    for (const LeafStorage& ls : leaf.storages) {
      EXPECT_EQ(ls.size, model.storages[U(ls.storage)].size);
      got[ls.storage] = ls.crossing;
    }
    EXPECT_EQ(got, expected) << "leaf " << l;
    EXPECT_EQ(leaf.untouched_through_bytes, untouched) << "leaf " << l;
    EXPECT_EQ(leaf.untouched_through_count, untouched_count) << "leaf " << l;
    EXPECT_EQ(leaf.entry_bytes, entry);
    EXPECT_EQ(leaf.exit_bytes, exit);
    EXPECT_EQ(leaf.throughout_bytes, throughout);
  }

  // Every planned storage laid out in exactly one leaf, one where it is resident.
  std::vector<int> laid(model.storages.size(), 0);
  for (int l = 0; l < nl; ++l) {
    for (StorageId sid : tree.leaves[U(l)].layout) {
      ++laid[U(sid)];
      EXPECT_EQ(tree.layout_leaf[U(sid)], l);
      const auto& st = tree.leaves[U(l)].storages;
      EXPECT_TRUE(std::any_of(st.begin(), st.end(),
                              [&](const LeafStorage& x) { return x.storage == sid; }));
    }
  }
  for (StorageId sid = 0; sid < static_cast<StorageId>(model.storages.size()); ++sid)
    EXPECT_EQ(laid[U(sid)], model.storages[U(sid)].planned() ? 1 : 0) << "storage " << sid;

  // ROAM eq 1: the whole order's peak is the largest leaf peak with boundary memory.
  Bytes max_leaf = 0;
  for (const Leaf& leaf : tree.leaves)
    max_leaf = std::max(max_leaf, SubgraphPeak(graph, model, leaf, leaf.ops));
  EXPECT_EQ(TheoreticalPeak(graph, model, tree.order), max_leaf);

  // The tree: root -> independent -> dependent, leaves where the nodes say.
  ASSERT_FALSE(tree.nodes.empty());
  EXPECT_EQ(tree.nodes[0].type, NodeType::kRoot);
  EXPECT_EQ(tree.nodes[0].num_ops, n);
  EXPECT_EQ(static_cast<int>(tree.nodes[0].leaves.size()), nl);
  for (int id = 1; id < static_cast<int>(tree.nodes.size()); ++id) {
    const SubgraphNode& node = tree.nodes[U(id)];
    const SubgraphNode& parent = tree.nodes[U(node.parent)];
    EXPECT_EQ(parent.type,
              node.type == NodeType::kIndependent ? NodeType::kRoot : NodeType::kIndependent);
    EXPECT_NE(std::find(parent.children.begin(), parent.children.end(), id), parent.children.end());
    EXPECT_EQ(node.leaf >= 0, node.children.empty());
    int ops = 0;
    for (int l : node.leaves) ops += static_cast<int>(tree.leaves[U(l)].ops.size());
    EXPECT_EQ(node.num_ops, ops);
    if (node.leaf >= 0) {
      EXPECT_EQ(tree.leaves[U(node.leaf)].node, id);
      EXPECT_EQ(node.leaves, std::vector<int>{node.leaf});
    }
    int covered = 0;
    for (const NodePart& part : node.parts) covered += part.last_step - part.first_step + 1;
    EXPECT_EQ(covered, node.num_ops);
  }
  EXPECT_EQ(tree.nodes[0].inner_storages + tree.nodes[0].boundary_storages,
            static_cast<int>(model.planned.size()));
}

void PartitionAndCheck(const Graph& graph, int node_limit) {
  MemoryModel model = BuildMemoryModel(graph);
  PartitionParams params;
  params.node_limit = node_limit;
  SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, params);
  SCOPED_TRACE("node_limit " + std::to_string(node_limit) + ", " + std::to_string(graph.num_ops()) +
               " ops");
  CheckPartitionInvariants(graph, model, tree, graph.program_order, node_limit);
}

}  // namespace roam::testing
