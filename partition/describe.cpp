#include "partition/describe.h"

#include <string>

#include "core/subgraph.h"

namespace roam {
namespace {

using Json = nlohmann::ordered_json;

Json OpIdOrNull(const Graph& graph, OpId op) {
  return op == kNoOp ? Json(nullptr) : Json(graph.ops[static_cast<size_t>(op)].ext_id);
}

}  // namespace

CrossingCounts CountCrossings(const Leaf& leaf) {
  CrossingCounts c;
  for (const LeafStorage& s : leaf.storages) {
    ++c.count[static_cast<int>(s.crossing)];
    c.bytes[static_cast<int>(s.crossing)] += s.size;
  }
  c.count[static_cast<int>(Crossing::kLiveThroughout)] += leaf.untouched_through_count;
  c.bytes[static_cast<int>(Crossing::kLiveThroughout)] += leaf.untouched_through_bytes;
  return c;
}

TreeCounts CountTree(const Graph& graph, const MemoryModel& model, const SubgraphTree& tree) {
  TreeCounts c;
  for (OpRole r : tree.role) {
    c.spine += r == OpRole::kSpine;
    c.floating_sources += r == OpRole::kFloatingSource;
    c.floating_sinks += r == OpRole::kFloatingSink;
    c.floating_bridges += r == OpRole::kFloatingBridge;
    c.weight_update_ops += r == OpRole::kWeightUpdate;
  }
  for (const WeightUpdateBranch& b : tree.branches)
    c.delayed_branches += b.segment > b.earliest_segment;
  for (const Leaf& leaf : tree.leaves) {
    c.leaves_over_limit += leaf.over_limit;
    c.leaf_peak.push_back(SubgraphPeak(graph, model, leaf, leaf.ops));
  }
  c.peak = TheoreticalPeak(graph, model, tree.order);
  return c;
}

Json TreeToJson(const Graph& graph, const SubgraphTree& tree, const TreeCounts& counts) {
  Json doc;
  doc["graph"] = graph.name;
  doc["ops"] = graph.num_ops();
  doc["node_limit"] = tree.node_limit;
  doc["peak"] = counts.peak;
  doc["phases_inferred"] = tree.phases.inferred;
  doc["alpha"] = tree.alpha;
  doc["update_placement"] =
      tree.update_placement ? Json(ToString(*tree.update_placement)) : Json(nullptr);
  doc["estimated_peak"] = tree.estimated_peak;
  doc["spine_ops"] = counts.spine;
  doc["insensitive_ops"] = tree.insensitive.size();
  doc["segments"] = tree.num_segments;
  doc["floating_sources"] = counts.floating_sources;
  doc["floating_sinks"] = counts.floating_sinks;
  doc["floating_bridges"] = counts.floating_bridges;
  doc["weight_update_branches"] = tree.branches.size();
  doc["weight_update_ops"] = counts.weight_update_ops;
  doc["delayed_branches"] = counts.delayed_branches;
  Json leaves = Json::array();
  for (size_t l = 0; l < tree.leaves.size(); ++l) {
    const Leaf& leaf = tree.leaves[l];
    const CrossingCounts c = CountCrossings(leaf);
    Json j;
    j["node"] = leaf.node;
    j["first_step"] = leaf.first_step;
    j["num_ops"] = leaf.ops.size();
    j["over_limit"] = leaf.over_limit;
    j["peak"] = counts.leaf_peak[l];
    j["entry_bytes"] = leaf.entry_bytes;
    j["exit_bytes"] = leaf.exit_bytes;
    j["throughout_bytes"] = leaf.throughout_bytes;
    for (int k = 0; k < 4; ++k)
      j[std::string(ToString(static_cast<Crossing>(k)))] = {{"count", c.count[k]},
                                                            {"bytes", c.bytes[k]}};
    j["layout_storages"] = leaf.layout.size();
    Json ops = Json::array();
    for (OpId op : leaf.ops) ops.push_back(graph.ops[static_cast<size_t>(op)].ext_id);
    j["ops"] = std::move(ops);
    leaves.push_back(std::move(j));
  }
  doc["leaves"] = std::move(leaves);
  Json nodes = Json::array();
  for (const SubgraphNode& node : tree.nodes) {
    Json j;
    j["type"] = ToString(node.type);
    j["parent"] = node.parent < 0 ? Json(nullptr) : Json(node.parent);
    j["children"] = node.children;
    j["leaves"] = node.leaves;
    j["leaf"] = node.leaf < 0 ? Json(nullptr) : Json(node.leaf);
    j["num_ops"] = node.num_ops;
    Json parts = Json::array();
    for (const NodePart& p : node.parts)
      parts.push_back({{"first_step", p.first_step},
                       {"last_step", p.last_step},
                       {"begin_boundary", OpIdOrNull(graph, p.begin_boundary)},
                       {"end_boundary", OpIdOrNull(graph, p.end_boundary)}});
    j["parts"] = std::move(parts);
    j["inner_storages"] = node.inner_storages;
    j["inner_bytes"] = node.inner_bytes;
    j["boundary_storages"] = node.boundary_storages;
    j["boundary_bytes"] = node.boundary_bytes;
    nodes.push_back(std::move(j));
  }
  doc["tree"] = std::move(nodes);
  return doc;
}

}  // namespace roam
