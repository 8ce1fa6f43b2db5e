// The partition on the generated model presets (configs/*.yaml): the invariants of
// docs/partition.md on every one, and the split points a training step must have — a
// memory-insensitive op at every residual add of the forward pass and at its mirror in the
// backward pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "config/config.h"
#include "core/memory_model.h"
#include "core/types.h"
#include "gen/generate.h"
#include "partition/partition.h"
#include "tests/partition/invariants.h"

namespace roam {
namespace {

config::Config Preset(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/" + name + ".yaml", overrides);
}

struct Partitioned {
  Graph graph;
  MemoryModel model;
  SubgraphTree tree;
};

Partitioned Partition(const config::Config& config, int node_limit) {
  Partitioned p;
  p.graph = gen::GenerateGraph(config);
  p.model = BuildMemoryModel(p.graph, config.planner.alignment);
  p.tree = PartitionGraph(p.graph, p.model, p.graph.program_order, {.node_limit = node_limit});
  return p;
}

// An add of two computed tensors (a residual add, or the sum of two gradients).
bool AddsTwoComputedTensors(const Graph& graph, OpId op) {
  const Op& o = graph.ops[U(op)];
  if (o.name != "aten.add.Tensor" && o.name != "aten.add" && o.name != "aten.add_.Tensor" &&
      o.name != "aten.add_")
    return false;
  int computed = 0;
  for (TensorId t : o.inputs)
    computed += graph.tensors[U(t)].producer != kNoOp && graph.tensors[U(t)].size > 0;
  return computed >= 2;
}

struct AddCounts {
  int forward = 0, forward_insensitive = 0;
  int backward_spine = 0, backward_insensitive = 0;
};

AddCounts CountAdds(const Partitioned& p) {
  std::vector<char> mi(U(p.graph.num_ops()), 0);
  for (OpId op : p.tree.insensitive) mi[U(op)] = 1;
  AddCounts c;
  for (OpId op = 0; op < p.graph.num_ops(); ++op) {
    if (!AddsTwoComputedTensors(p.graph, op)) continue;
    const Phase phase = p.tree.phases.phase[U(op)];
    if (phase == Phase::kForward) {
      ++c.forward;
      c.forward_insensitive += mi[U(op)];
    } else if (phase == Phase::kBackward && p.tree.role[U(op)] == OpRole::kSpine) {
      ++c.backward_spine;
      c.backward_insensitive += mi[U(op)];
    }
  }
  return c;
}

int IndependentSubgraphs(const SubgraphTree& tree) {
  return static_cast<int>(std::count_if(tree.nodes.begin(), tree.nodes.end(), [](const auto& n) {
    return n.type == NodeType::kIndependent;
  }));
}

// The big presets are checked with fewer layers (same blocks, same code paths); GPT-2 XL once
// at full size.
std::vector<std::string> Overrides(const std::string& name) {
  if (name == "gpt2-medium" || name == "gpt2-large") return {"model.n_layer=3"};
  if (name == "bert-large") return {"model.n_layer=3"};
  if (name.rfind("llama", 0) == 0 && name != "llama-tiny")
    return {"model.n_layer=2", "model.seq_len=512"};
  return {};
}

TEST(PartitionInvariants, HoldOnEveryConfigPreset) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(ROAM_CONFIGS_DIR))
    if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 12u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    const config::Config config = Preset(name, Overrides(name));
    const Partitioned p = Partition(config, config.planner.partition.node_limit);
    testing::CheckPartitionInvariants(p.graph, p.model, p.tree, p.graph.program_order,
                                      config.planner.partition.node_limit);
    // Every preset is a training step with a forward and a backward pass to mirror.
    EXPECT_NE(p.tree.forward_end, kNoOp);
    EXPECT_NE(p.tree.backward_start, kNoOp);
    EXPECT_GT(IndependentSubgraphs(p.tree), 1);
  }
}

// The binding rules read the input order (a bridge's natural segment); any topological order
// must give a valid partition of it.
TEST(PartitionInvariants, HoldOnPresetsUnderRandomTopologicalOrders) {
  std::mt19937_64 rng(61);
  for (const auto& [name, overrides] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"gpt2-small", {"model.n_layer=2"}},
           {"bert-base", {"model.n_layer=1"}},
           {"resnet18", {}},
           {"mobilenet_v2", {}}}) {
    SCOPED_TRACE(name);
    const config::Config config = Preset(name, overrides);
    const Graph graph = gen::GenerateGraph(config);
    const MemoryModel model = BuildMemoryModel(graph, config.planner.alignment);
    const Dependencies deps = BuildDependencies(graph);
    for (int trial = 0; trial < 3; ++trial) {
      // Kahn's algorithm picking a random ready op.
      std::vector<int> missing(U(graph.num_ops()));
      std::vector<OpId> ready, order;
      for (OpId op = 0; op < graph.num_ops(); ++op)
        if ((missing[U(op)] = static_cast<int>(deps.Preds(op).size())) == 0) ready.push_back(op);
      while (!ready.empty()) {
        std::uniform_int_distribution<size_t> pick(0, ready.size() - 1);
        std::swap(ready[pick(rng)], ready.back());
        const OpId op = ready.back();
        ready.pop_back();
        order.push_back(op);
        for (OpId s : deps.Succs(op))
          if (--missing[U(s)] == 0) ready.push_back(s);
      }
      const int limit = 10 + 20 * trial;
      const SubgraphTree tree = PartitionGraph(graph, model, order, {.node_limit = limit});
      testing::CheckPartitionInvariants(graph, model, tree, order, limit);
    }
  }
}

TEST(PartitionOfPresets, Gpt2SplitsAtEveryResidualAddInBothPasses) {
  for (int layers : {2, 12}) {
    SCOPED_TRACE(std::to_string(layers) + " layers");
    const Partitioned p =
        Partition(Preset("gpt2-small", {"model.n_layer=" + std::to_string(layers)}), 40);
    // The embedding sum and two residual adds per block; in the backward pass the two sums of
    // the residual stream's gradients per block (the tied embedding's gradient sum belongs to
    // its weight-update branch).
    const AddCounts c = CountAdds(p);
    EXPECT_EQ(c.forward, 2 * layers + 1);
    EXPECT_EQ(c.forward_insensitive, c.forward);
    EXPECT_EQ(c.backward_spine, 2 * layers);
    EXPECT_EQ(c.backward_insensitive, c.backward_spine);
    for (const Leaf& leaf : p.tree.leaves) EXPECT_FALSE(leaf.over_limit) << leaf.ops.size();
    const int igs = IndependentSubgraphs(p.tree);
    EXPECT_GE(igs, layers);
    EXPECT_LE(igs, 8 * layers + 4);
  }
}

TEST(PartitionOfPresets, ResnetSplitsAtEveryResidualAddInBothPasses) {
  const Partitioned p = Partition(Preset("resnet18"), 40);
  const AddCounts c = CountAdds(p);
  EXPECT_EQ(c.forward, 8);  // one per BasicBlock
  EXPECT_EQ(c.forward_insensitive, 8);
  EXPECT_EQ(c.backward_spine, 8);
  EXPECT_EQ(c.backward_insensitive, 8);
  for (const Leaf& leaf : p.tree.leaves) EXPECT_FALSE(leaf.over_limit);
}

TEST(PartitionOfPresets, BertSplitsEverywhereButInsideEachAttentionBackward) {
  const Partitioned p = Partition(Preset("bert-base", {"model.n_layer=4"}), 40);
  const AddCounts c = CountAdds(p);
  EXPECT_EQ(c.forward_insensitive, c.forward);
  // Per layer four adds sum gradients of the residual stream: the MLP's, and three folding in
  // the Q, K and V projections' input gradients one by one. The first two of those are not
  // split points (the backward of the projection still to come runs beside them).
  EXPECT_EQ(c.backward_spine, 4 * 4);
  EXPECT_EQ(c.backward_insensitive, 2 * 4);
  // BERT's separate Q, K and V projections run side by side in the backward pass: 41 ops with
  // no op ordered against all the others, one such leaf per layer, flagged.
  int over = 0;
  for (const Leaf& leaf : p.tree.leaves) over += leaf.over_limit;
  EXPECT_EQ(over, 4);
}

TEST(PartitionOfPresets, PhasesInferredFromOpNamesGiveTheSameSplitPoints) {
  Partitioned p = Partition(Preset("gpt2-small", {"model.n_layer=2"}), 40);
  Graph stripped = p.graph;
  for (Op& op : stripped.ops) op.phase = Phase::kUnknown;
  const SubgraphTree tree = PartitionGraph(stripped, p.model, stripped.program_order, {});
  EXPECT_TRUE(tree.phases.inferred);
  EXPECT_EQ(tree.insensitive, p.tree.insensitive);
}

// GPT-2 ties the LM head to the token embedding: its weight gradient is summed with the
// embedding's at the very end of the backward pass. The LM head's gradient matmul must still
// run where PyTorch runs it, early, not wait in the update branch holding the logits' gradient
// (the biggest tensor of the step) alive through the whole backward pass.
TEST(PartitionOfPresets, TiedEmbeddingGradientIsComputedWhenReadyNotWithItsUpdate) {
  const Partitioned p = Partition(Preset("gpt2-small", {"model.n_layer=2"}), 40);
  Bytes largest = 0;
  for (StorageId sid : p.model.planned)
    if (p.graph.tensors[U(p.model.storages[U(sid)].root)].kind == TensorKind::kGradient)
      largest = std::max(largest, p.model.storages[U(sid)].size);
  const auto life = ComputeLifetimes(p.graph, p.model, p.tree.order);
  int checked = 0;
  for (StorageId sid : p.model.planned) {
    if (p.graph.tensors[U(p.model.storages[U(sid)].root)].kind != TensorKind::kGradient ||
        p.model.storages[U(sid)].size != largest)
      continue;
    ++checked;
    for (OpId op = 0; op < p.graph.num_ops(); ++op) {
      auto touches = p.model.Touches(op);
      if (std::find(touches.begin(), touches.end(), sid) != touches.end()) {
        EXPECT_NE(p.tree.role[U(op)], OpRole::kWeightUpdate) << p.graph.ops[U(op)].name;
      }
    }
    EXPECT_LT(life[U(sid)].end - life[U(sid)].start, p.graph.num_ops() / 20);
  }
  EXPECT_GE(checked, 2);  // the gradients of the log-probabilities and of the logits
}

// LLaMA's first RMSNorm backward feeds only the embedding's gradient, so the extension takes it
// into the embedding's update branch and the peel hands it back. Its `pow` of the saved rsqrt
// is ready in the forward pass; run there, its output would wait across the activation peak
// for its consumer in the backward. No op the peel hands back runs before the input order
// has it, and the tree's order peaks no higher than the order it refines.
TEST(PartitionOfPresets, HandedBackOpsRunNoEarlierThanTheInputOrderHasThem) {
  for (const char* name : {"llama-tiny", "gpt2-small"}) {
    SCOPED_TRACE(name);
    const Partitioned p = Partition(Preset(name, {"model.n_layer=2"}), 40);
    // Natural segment: that of the latest spine op at or before the op in the input order.
    std::vector<int> natural(U(p.graph.num_ops()), 0);
    int segment = 0;
    for (OpId op : p.graph.program_order) {
      if (p.tree.role[U(op)] == OpRole::kSpine) segment = p.tree.segment_of_op[U(op)];
      natural[U(op)] = segment;
    }
    int sinks = 0;
    for (OpId op = 0; op < p.graph.num_ops(); ++op) {
      if (p.tree.role[U(op)] != OpRole::kFloatingSink) continue;
      ++sinks;
      EXPECT_GE(p.tree.segment_of_op[U(op)], natural[U(op)]) << p.graph.ops[U(op)].name;
    }
    EXPECT_GT(sinks, 0);
    EXPECT_LE(TheoreticalPeak(p.graph, p.model, p.tree.order),
              TheoreticalPeak(p.graph, p.model, p.graph.program_order));
  }
}

}  // namespace
}  // namespace roam
