// roam partition: print the subgraph tree of a graph (docs/partition.md).
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "apps/cli.h"
#include "core/memory_model.h"
#include "partition/partition.h"

namespace roam::cli {
namespace {

struct PartitionOptions {
  InputOptions input;
  PartitionParams params;
  std::string updates = "scheduled";
  bool json = false;
  // Set when given; otherwise the input's planner section decides (FlagOr).
  const CLI::Option* node_limit_flag = nullptr;
  const CLI::Option* alpha_flag = nullptr;
  const CLI::Option* delay_radius_flag = nullptr;
};

struct LeafCounts {
  int count[4] = {0, 0, 0, 0};
  Bytes bytes[4] = {0, 0, 0, 0};
};

LeafCounts CountCrossings(const Leaf& leaf) {
  LeafCounts c;
  for (const LeafStorage& s : leaf.storages) {
    ++c.count[static_cast<int>(s.crossing)];
    c.bytes[static_cast<int>(s.crossing)] += s.size;
  }
  return c;
}

nlohmann::ordered_json OpIdOrNull(const Graph& graph, OpId op) {
  return op == kNoOp ? nlohmann::ordered_json(nullptr)
                     : nlohmann::ordered_json(graph.ops[static_cast<size_t>(op)].ext_id);
}

std::string Boundary(const Graph& graph, OpId op) {
  if (op == kNoOp) return "-";
  const Op& o = graph.ops[static_cast<size_t>(op)];
  return std::to_string(o.ext_id) + " (" + o.name + ")";
}

int RunPartition(PartitionOptions options) {
  for (UpdatePlacement p :
       {UpdatePlacement::kScheduled, UpdatePlacement::kWhenReady, UpdatePlacement::kAtEnd,
        UpdatePlacement::kSplit})
    if (ToString(p) == options.updates) options.params.update_placement = p;
  Input input = LoadInput(options.input);
  const Graph& graph = input.graph;
  PartitionParams& params = options.params;
  params.node_limit = FlagOr(options.node_limit_flag, params.node_limit, input.planner.partition.node_limit);
  params.alpha = FlagOr(options.alpha_flag, params.alpha, input.planner.partition.alpha);
  params.delay_radius =
      FlagOr(options.delay_radius_flag, params.delay_radius, input.planner.partition.delay_radius);
  MemoryModel model = BuildMemoryModel(graph, input.planner.alignment);
  const SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, options.params);
  std::vector<Bytes> leaf_peak;
  for (const Leaf& leaf : tree.leaves) leaf_peak.push_back(SubgraphPeak(graph, model, leaf, leaf.ops));
  const Bytes peak = TheoreticalPeak(graph, model, tree.order);
  int spine = 0, floating = 0, sinks = 0, bridges = 0, updates = 0, delayed = 0, over = 0;
  for (OpRole r : tree.role) {
    spine += r == OpRole::kSpine;
    floating += r == OpRole::kFloatingSource;
    sinks += r == OpRole::kFloatingSink;
    bridges += r == OpRole::kFloatingBridge;
    updates += r == OpRole::kWeightUpdate;
  }
  for (const WeightUpdateBranch& b : tree.branches) delayed += b.segment > b.earliest_segment;
  for (const Leaf& leaf : tree.leaves) over += leaf.over_limit;

  if (options.json) {
    using Json = nlohmann::ordered_json;
    Json doc;
    doc["graph"] = graph.name;
    doc["ops"] = graph.num_ops();
    doc["node_limit"] = tree.node_limit;
    doc["peak"] = peak;
    doc["phases_inferred"] = tree.phases.inferred;
    doc["alpha"] = tree.alpha;
    doc["update_placement"] = ToString(options.params.update_placement);
    doc["estimated_peak"] = tree.estimated_peak;
    doc["spine_ops"] = spine;
    doc["insensitive_ops"] = tree.insensitive.size();
    doc["segments"] = tree.num_segments;
    doc["floating_sources"] = floating;
    doc["floating_sinks"] = sinks;
    doc["floating_bridges"] = bridges;
    doc["weight_update_branches"] = tree.branches.size();
    doc["weight_update_ops"] = updates;
    doc["delayed_branches"] = delayed;
    Json leaves = Json::array();
    for (size_t l = 0; l < tree.leaves.size(); ++l) {
      const Leaf& leaf = tree.leaves[l];
      LeafCounts c = CountCrossings(leaf);
      Json j;
      j["node"] = leaf.node;
      j["first_step"] = leaf.first_step;
      j["num_ops"] = leaf.ops.size();
      j["over_limit"] = leaf.over_limit;
      j["peak"] = leaf_peak[l];
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
    std::cout << doc.dump() << "\n";
    return kOk;
  }

  std::ostringstream out;
  out << "graph " << graph.name << ": " << graph.num_ops() << " ops, " << tree.leaves.size()
      << " leaves (" << over << " over the node limit " << tree.node_limit << "), peak of the "
      << "partition order " << FormatBytes(peak) << "\n";
  out << "phases " << (tree.phases.inferred ? "inferred" : "from the file") << "; spine " << spine
      << " ops, " << tree.insensitive.size() << " memory-insensitive, " << tree.num_segments
      << " segments; floating sources " << floating << ", sinks " << sinks << ", bridges "
      << bridges << "; weight-update branches " << tree.branches.size() << " (" << updates
      << " ops, " << delayed << " delayed, alpha " << tree.alpha << ", estimated peak "
      << FormatBytes(tree.estimated_peak) << ")\n";
  auto print_node = [&](int id, int depth) {
    const SubgraphNode& node = tree.nodes[static_cast<size_t>(id)];
    out << std::string(static_cast<size_t>(2 * depth), ' ') << ToString(node.type) << " #" << id
        << ": " << node.num_ops << " ops";
    if (node.type != NodeType::kRoot) {
      out << ", parts";
      for (const NodePart& p : node.parts)
        out << " [steps " << p.first_step << ".." << p.last_step << ", boundaries "
            << Boundary(graph, p.begin_boundary) << " .. " << Boundary(graph, p.end_boundary)
            << "]";
    }
    out << "; inner tensors " << node.inner_storages << " (" << FormatBytes(node.inner_bytes)
        << "), boundary tensors " << node.boundary_storages << " ("
        << FormatBytes(node.boundary_bytes) << ")";
    if (node.leaf >= 0) {
      const Leaf& leaf = tree.leaves[static_cast<size_t>(node.leaf)];
      LeafCounts c = CountCrossings(leaf);
      out << "\n"
          << std::string(static_cast<size_t>(2 * depth + 4), ' ') << "leaf " << node.leaf
          << ": peak " << FormatBytes(leaf_peak[static_cast<size_t>(node.leaf)])
          << "; live at entry " << FormatBytes(leaf.entry_bytes) << ", at exit "
          << FormatBytes(leaf.exit_bytes) << ", throughout " << FormatBytes(leaf.throughout_bytes)
          << "; created-inside-freed-outside " << c.count[1] << ", created-outside-freed-inside "
          << c.count[2] << ", live-throughout " << c.count[3] << ", laid out here "
          << leaf.layout.size();
      if (leaf.over_limit) out << "; OVER THE NODE LIMIT: one segment that cannot be split";
    }
    out << "\n";
  };
  print_node(0, 0);
  for (int ig : tree.nodes[0].children) {
    print_node(ig, 1);
    for (int dg : tree.nodes[static_cast<size_t>(ig)].children) print_node(dg, 2);
  }
  std::cout << out.str();
  return kOk;
}

}  // namespace

void AddPartitionCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<PartitionOptions>();
  CLI::App* cmd = app.add_subcommand(
      "partition", "Split a graph into ROAM's subgraph tree and print it (docs/partition.md)");
  AddInputOptions(*cmd, options->input);
  options->node_limit_flag =
      cmd->add_option("--node-limit", options->params.node_limit,
                      "Most ops in one leaf (default: the config's planner.partition.node_limit)")
          ->check(CLI::PositiveNumber)
          ->capture_default_str();
  options->alpha_flag =
      cmd->add_option("--alpha", options->params.alpha,
                      "Weight-update memory in gradient sizes (0: 3 for Adam-like, else 1; "
                      "default: the config's planner.partition.alpha)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
  options->delay_radius_flag =
      cmd->add_option("--delay-radius", options->params.delay_radius,
                      "Delay only updates whose gradient exceeds this many average tensor sizes "
                      "(default: the config's planner.partition.delay_radius)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
  cmd->add_option("--updates", options->updates,
                  "Where weight-update branches run: scheduled (ROAM eqs 4-6), when-ready, at-end, split")
      ->check(CLI::IsMember({"scheduled", "when-ready", "at-end", "split"}))
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print the tree as one JSON object");
  cmd->callback([options, &action] { action = [options] { return RunPartition(*options); }; });
}

}  // namespace roam::cli
