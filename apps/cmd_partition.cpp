// roam partition: print the subgraph tree of a graph (docs/partition.md).
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

#include "apps/cli.h"
#include "core/memory_model.h"
#include "partition/describe.h"
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

std::string Boundary(const Graph& graph, OpId op) {
  if (op == kNoOp) return "-";
  const Op& o = graph.ops[static_cast<size_t>(op)];
  return std::to_string(o.ext_id) + " (" + o.name + ")";
}

int RunPartition(PartitionOptions options) {
  for (UpdatePlacement p : {UpdatePlacement::kScheduled, UpdatePlacement::kWhenReady,
                            UpdatePlacement::kAtEnd, UpdatePlacement::kSplit})
    if (ToString(p) == options.updates) options.params.update_placement = p;
  Input input = LoadInput(options.input);
  const Graph& graph = input.graph;
  PartitionParams& params = options.params;
  params.node_limit =
      FlagOr(options.node_limit_flag, params.node_limit, input.planner.partition.node_limit);
  params.alpha = FlagOr(options.alpha_flag, params.alpha, input.planner.partition.alpha);
  params.delay_radius =
      FlagOr(options.delay_radius_flag, params.delay_radius, input.planner.partition.delay_radius);
  MemoryModel model = BuildMemoryModel(graph, input.planner.alignment);
  const SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, options.params);
  const TreeCounts counts = CountTree(graph, model, tree);
  if (options.json) {
    std::cout << TreeToJson(graph, tree, counts).dump() << "\n";
    return kOk;
  }

  std::ostringstream out;
  out << "graph " << graph.name << ": " << graph.num_ops() << " ops, " << tree.leaves.size()
      << " leaves (" << counts.leaves_over_limit << " over the node limit " << tree.node_limit
      << "), peak of the "
      << "partition order " << FormatBytes(counts.peak) << "\n";
  out << "phases " << (tree.phases.inferred ? "inferred" : "from the file") << "; spine "
      << counts.spine << " ops, " << tree.insensitive.size() << " memory-insensitive, "
      << tree.num_segments << " segments; floating sources " << counts.floating_sources
      << ", sinks " << counts.floating_sinks << ", bridges " << counts.floating_bridges
      << "; weight-update branches " << tree.branches.size() << " (" << counts.weight_update_ops
      << " ops, " << counts.delayed_branches << " delayed, alpha " << tree.alpha
      << ", estimated peak " << FormatBytes(tree.estimated_peak) << ")\n";
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
      const CrossingCounts c = CountCrossings(leaf);
      out << "\n"
          << std::string(static_cast<size_t>(2 * depth + 4), ' ') << "leaf " << node.leaf
          << ": peak " << FormatBytes(counts.leaf_peak[static_cast<size_t>(node.leaf)])
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
          ->check(FiniteNumber(0, 1e6))
          ->capture_default_str();
  options->delay_radius_flag =
      cmd->add_option("--delay-radius", options->params.delay_radius,
                      "Delay only updates whose gradient exceeds this many average tensor sizes "
                      "(default: the config's planner.partition.delay_radius)")
          ->check(FiniteNumber(0, 1e6))
          ->capture_default_str();
  cmd->add_option(
         "--updates", options->updates,
         "Where weight-update branches run: scheduled (ROAM eqs 4-6), when-ready, at-end, split")
      ->check(CLI::IsMember({"scheduled", "when-ready", "at-end", "split"}))
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print the tree as one JSON object");
  cmd->callback([options, &action] { action = [options] { return RunPartition(*options); }; });
}

}  // namespace roam::cli
