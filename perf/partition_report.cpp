// The partition of every model preset (perf/RESULTS.md, section "Partitioning"): leaf-size
// histograms, and the theoretical peak of the partition order under each weight-update
// placement. Prints Markdown tables. Deterministic: no timing here (that is partition_bench).
//
// Usage: partition_report [--set key=value ...] [CONFIG.yaml ...]
//        (default: every configs/*.yaml; the overrides apply to every config)
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/memory_model.h"
#include "core/types.h"
#include "gen/generate.h"
#include "partition/partition.h"

namespace roam {
namespace {

std::string Thousands(long long v) {
  std::string s = std::to_string(v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return out;
}
std::string MiB(Bytes b) { return Thousands((b + (1 << 19)) >> 20); }

// Weight-update branches moved to run right after their last predecessor (op granularity, not
// segment granularity): "update immediately when the gradient is generated".
std::vector<OpId> UpdatesImmediately(const Graph& graph, const SubgraphTree& tree) {
  const Dependencies deps = BuildDependencies(graph);
  struct Key {
    Step anchor;
    int branch;
    Step pos;
  };
  std::vector<Key> key(U(graph.num_ops()));
  for (size_t p = 0; p < tree.order.size(); ++p) {
    const OpId op = tree.order[p];
    const Step pos = static_cast<Step>(p);
    if (tree.role[U(op)] != OpRole::kWeightUpdate) {
      key[U(op)] = {pos, 0, pos};
      continue;
    }
    Step anchor = -1;
    for (OpId pred : deps.Preds(op)) anchor = std::max(anchor, key[U(pred)].anchor);
    key[U(op)] = {anchor, 1, pos};
  }
  std::vector<OpId> order = tree.order;
  std::sort(order.begin(), order.end(), [&](OpId a, OpId b) {
    const Key &x = key[U(a)], &y = key[U(b)];
    if (x.anchor != y.anchor) return x.anchor < y.anchor;
    if (x.branch != y.branch) return x.branch < y.branch;
    return x.pos < y.pos;
  });
  if (std::string problem = CheckTopological(graph, deps, order); !problem.empty())
    throw std::logic_error("UpdatesImmediately: " + problem);
  return order;
}

int Run(std::vector<std::string> configs, const std::vector<std::string>& overrides) {
  if (configs.empty()) {
    for (const auto& e : std::filesystem::directory_iterator(ROAM_CONFIGS_DIR))
      if (e.path().extension() == ".yaml") configs.push_back(e.path().string());
    std::sort(configs.begin(), configs.end());
  }
  // Leaves within the limit by size (bucket upper bounds), then the ones over it.
  const std::array<int, 8> bounds = {1, 5, 10, 20, 30, 40, 50, 1 << 30};
  std::printf(
      "| preset | ops | node_limit | spine | insensitive | independent | leaves | 1 | 2-5 | 6-10 "
      "| 11-20 | 21-30 | 31-40 | 41-50 | > 50 | over limit | median | peak / program |\n");
  std::printf(
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
      "\n");
  std::string placements;
  for (const std::string& path : configs) {
    const config::Config config = roam::config::LoadConfig(path, overrides);
    const Graph graph = gen::GenerateGraph(config);
    const MemoryModel model = BuildMemoryModel(graph, config.planner.alignment);
    PartitionParams params;
    params.node_limit = config.planner.partition.node_limit;
    params.alpha = config.planner.partition.alpha;
    params.delay_radius = config.planner.partition.delay_radius;
    const SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, params);
    const Bytes program = TheoreticalPeak(graph, model, graph.program_order);
    const Bytes peak = TheoreticalPeak(graph, model, tree.order);
    std::array<int, 9> buckets{};
    std::vector<int> sizes;
    for (const Leaf& leaf : tree.leaves) {
      const int n = static_cast<int>(leaf.ops.size());
      sizes.push_back(n);
      if (leaf.over_limit) {
        ++buckets[8];
        continue;
      }
      for (size_t b = 0; b < bounds.size(); ++b)
        if (n <= bounds[b]) {
          ++buckets[b];
          break;
        }
    }
    std::sort(sizes.begin(), sizes.end());
    int spine = 0, independent = 0;
    for (OpRole r : tree.role) spine += r == OpRole::kSpine;
    for (const SubgraphNode& node : tree.nodes) independent += node.type == NodeType::kIndependent;
    std::printf("| %s | %s | %d | %d | %zu | %d | %zu |", graph.name.c_str(),
                Thousands(graph.num_ops()).c_str(), params.node_limit, spine,
                tree.insensitive.size(), independent, tree.leaves.size());
    for (int c : buckets) std::printf(" %d |", c);
    std::printf(" %d | %.4f |\n", sizes.empty() ? 0 : sizes[sizes.size() / 2],
                static_cast<double>(peak) / static_cast<double>(program));

    if (graph.name.rfind("gpt2", 0) != 0) continue;
    auto peak_with = [&](UpdatePlacement placement) {
      PartitionParams p = params;
      p.update_placement = placement;
      SubgraphTree t = PartitionGraph(graph, model, graph.program_order, p);
      int delayed = 0;
      for (const WeightUpdateBranch& b : t.branches) delayed += b.segment > b.earliest_segment;
      return std::make_pair(TheoreticalPeak(graph, model, t.order), delayed);
    };
    const auto [scheduled, delayed] = peak_with(UpdatePlacement::kScheduled);
    const auto [ready, unused_ready] = peak_with(UpdatePlacement::kWhenReady);
    const auto [at_end, unused_end] = peak_with(UpdatePlacement::kAtEnd);
    PartitionParams p = params;
    p.update_placement = UpdatePlacement::kWhenReady;
    const Bytes immediate = TheoreticalPeak(
        graph, model,
        UpdatesImmediately(graph, PartitionGraph(graph, model, graph.program_order, p)));
    char row[512];
    std::snprintf(row, sizeof row, "| %s | %s | %s (%d delayed of %zu) | %s | %s | %s |\n",
                  graph.name.c_str(), MiB(program).c_str(), MiB(scheduled).c_str(), delayed,
                  tree.branches.size(), MiB(ready).c_str(), MiB(immediate).c_str(),
                  MiB(at_end).c_str());
    placements += row;
  }
  if (!placements.empty()) {
    std::printf(
        "\nTheoretical peak (MiB) of the partition order by weight-update placement:\n\n"
        "| preset | program order | scheduled (ROAM eqs 4-6) | when ready (segment) | "
        "immediately after the gradient (op) | all at the end |\n"
        "|---|---:|---:|---:|---:|---:|\n%s",
        placements.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace roam

int main(int argc, char** argv) {
  try {
    std::vector<std::string> configs, overrides;
    for (int i = 1; i < argc; ++i) {
      const std::string arg = argv[i];
      if (arg == "--set" && i + 1 < argc)
        overrides.push_back(argv[++i]);
      else
        configs.push_back(arg);
    }
    return roam::Run(configs, overrides);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "partition_report: %s\n", e.what());
    return 1;
  }
}
