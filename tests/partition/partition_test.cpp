// The subgraph tree: its invariants on random and training-like graphs, the weight-update
// scheduler (ROAM eqs 4-6) on a hand-computed case, phase inference and edge cases.
#include "partition/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <stdexcept>

#include "core/io.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"
#include "tests/support/training_graph.h"

namespace roam {
namespace {

size_t U(int i) { return static_cast<size_t>(i); }

// Every invariant of docs/partition.md, each computed from the definitions, not from the
// partition's own bookkeeping.
void CheckInvariants(const Graph& graph, const MemoryModel& model, const SubgraphTree& tree,
                     std::span<const OpId> input_order, int node_limit) {
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
    std::map<StorageId, Crossing> expected;
    Bytes entry = 0, exit = 0, throughout = 0;
    for (StorageId sid : model.planned) {
      const Storage& s = model.storages[U(sid)];
      const Step start = life[U(sid)].start;
      const Step end = s.output ? std::numeric_limits<Step>::max() : life[U(sid)].end;
      if (end < b || start > e) continue;
      Crossing c = start >= b ? (end <= e ? Crossing::kInner : Crossing::kCreatedInsideFreedOutside)
                              : (end <= e ? Crossing::kCreatedOutsideFreedInside
                                          : Crossing::kLiveThroughout);
      expected[sid] = c;
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
  for (const Leaf& leaf : tree.leaves) max_leaf = std::max(max_leaf, LeafPeak(graph, model, leaf));
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
  CheckInvariants(graph, model, tree, graph.program_order, node_limit);
}

TEST(PartitionInvariants, HoldOnRandomDags) {
  std::mt19937_64 rng(21);
  for (int trial = 0; trial < 300; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 1 + trial % 50;
    options.graph_inputs = trial % 3;
    Graph graph = testing::RandomGraph(rng, options);
    PartitionAndCheck(graph, 1 + trial % 12);
  }
}

TEST(PartitionInvariants, HoldOnTrainingLikeGraphs) {
  std::mt19937_64 rng(22);
  for (int trial = 0; trial < 120; ++trial) {
    testing::TrainingGraphOptions options;
    options.layers = 1 + trial % 9;
    options.adam = trial % 2 == 0;
    options.phases = trial % 5 != 0;
    options.long_skip_prob = trial % 3 == 0 ? 0.5 : 0.1;
    Graph graph = testing::TrainingLikeGraph(rng, options);
    PartitionAndCheck(graph, 1 + (trial * 7) % 60);
  }
}

TEST(PartitionInvariants, HoldUnderAnyTopologicalOrderToRefine) {
  std::mt19937_64 rng(23);
  for (int trial = 0; trial < 30; ++trial) {
    testing::TrainingGraphOptions options;
    options.layers = 2 + trial % 4;
    Graph graph = testing::TrainingLikeGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph);
    // Reverse-priority Kahn: a legal order far from the program order.
    Dependencies deps = BuildDependencies(graph);
    std::vector<int> missing(U(graph.num_ops()));
    std::vector<OpId> ready, order;
    for (OpId op = 0; op < graph.num_ops(); ++op)
      if ((missing[U(op)] = static_cast<int>(deps.Preds(op).size())) == 0) ready.push_back(op);
    while (!ready.empty()) {
      auto it = std::max_element(ready.begin(), ready.end());
      OpId op = *it;
      ready.erase(it);
      order.push_back(op);
      for (OpId s : deps.Succs(op))
        if (--missing[U(s)] == 0) ready.push_back(s);
    }
    PartitionParams params;
    params.node_limit = 10;
    SubgraphTree tree = PartitionGraph(graph, model, order, params);
    CheckInvariants(graph, model, tree, order, params.node_limit);
  }
}

TEST(PartitionInvariants, HoldOnEveryConfigPreset) {
  // The model presets land with the generators (configs/*.yaml); until then there is nothing
  // to load and this test says so.
  std::filesystem::path dir = testing::SourceDir() + "/configs";
  int presets = 0;
  if (std::filesystem::is_directory(dir)) {
    for (const auto& entry : std::filesystem::directory_iterator(dir))
      if (entry.path().extension() == ".json") {
        Graph graph = LoadGraph(entry.path().string());
        PartitionAndCheck(graph, 40);
        ++presets;
      }
  }
  if (presets == 0) GTEST_SKIP() << "no graph presets in " << dir;
}

TEST(Partition, FindsSplitPointsBehindFloatingOpsInTrainingGraphs) {
  std::mt19937_64 rng(31);
  for (int trial = 0; trial < 20; ++trial) {
    testing::TrainingGraphOptions options;
    options.layers = 6;
    Graph graph = testing::TrainingLikeGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph);
    SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, {.node_limit = 12});
    // Every layer ends in an op everything else is ordered against, in both passes.
    EXPECT_GE(static_cast<int>(tree.insensitive.size()), 2 * options.layers);
    EXPECT_GT(tree.nodes[0].children.size(), 2u);
    Dependencies deps = BuildDependencies(graph);
    for (OpId op = 0; op < graph.num_ops(); ++op) {
      const Op& o = graph.ops[U(op)];
      if (o.phase == Phase::kOptimizer) {
        EXPECT_EQ(tree.role[U(op)], OpRole::kWeightUpdate);
      }
      // Weight transposes float, and sit with their first consumer.
      if (o.name == "aten.t" && o.phase == Phase::kForward) {
        EXPECT_EQ(tree.role[U(op)], OpRole::kFloatingSource);
        int first = static_cast<int>(tree.leaves.size());
        for (OpId s : deps.Succs(op)) first = std::min(first, tree.leaf_of_op[U(s)]);
        EXPECT_EQ(tree.leaf_of_op[U(op)], first);
      }
    }
  }
}

TEST(Partition, IndependentSubgraphsKeepEachActivationWithItsBackwardUse) {
  std::mt19937_64 rng(32);
  for (int trial = 0; trial < 30; ++trial) {
    testing::TrainingGraphOptions options;
    options.layers = 3 + trial % 6;
    options.long_skip_prob = 0.3;
    Graph graph = testing::TrainingLikeGraph(rng, options);
    MemoryModel model = BuildMemoryModel(graph);
    SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, {.node_limit = 8});
    auto ig_of = [&](OpId op) {
      int node = tree.leaves[U(tree.leaf_of_op[U(op)])].node;
      return tree.nodes[U(node)].type == NodeType::kDependent ? tree.nodes[U(node)].parent : node;
    };
    auto spine = [&](OpId op) {
      return tree.role[U(op)] == OpRole::kSpine || tree.role[U(op)] == OpRole::kFloatingSink;
    };
    for (StorageId sid : model.planned) {
      OpId creator = graph.tensors[U(model.storages[U(sid)].root)].producer;
      if (!spine(creator) || graph.ops[U(creator)].phase != Phase::kForward) continue;
      OpId last = kNoOp;
      for (OpId op : graph.program_order) {
        auto touches = model.Touches(op);
        if (spine(op) && std::find(touches.begin(), touches.end(), sid) != touches.end()) last = op;
      }
      if (graph.ops[U(last)].phase != Phase::kBackward) continue;
      EXPECT_EQ(ig_of(creator), ig_of(last)) << "storage " << sid;
    }
  }
}

TEST(Partition, AGraphWithNoSplitPointIsOneLeafFlaggedOverTheLimit) {
  // Two chains that never meet: no op is related to every other.
  Graph graph;
  for (int i = 0; i < 12; ++i) graph.ops.push_back(Op{i, "op", Phase::kUnknown, {}, {}});
  for (int i = 0; i < 12; ++i) {
    if (i == 5 || i == 11) continue;
    Tensor t;
    t.ext_id = i;
    t.size = 100;
    t.producer = i;
    t.consumers = {i + 1};
    graph.tensors.push_back(t);
  }
  graph.program_order = {0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11};
  Finalize(graph, "test");
  MemoryModel model = BuildMemoryModel(graph);
  SubgraphTree tree = PartitionGraph(graph, model, graph.program_order, {.node_limit = 4});
  ASSERT_EQ(tree.leaves.size(), 1u);
  EXPECT_TRUE(tree.leaves[0].over_limit);
  EXPECT_EQ(tree.leaves[0].ops, graph.program_order);
  CheckInvariants(graph, model, tree, graph.program_order, 4);
}

TEST(Partition, ALimitAboveTheGraphSizeGivesOneLeaf) {
  std::mt19937_64 rng(33);
  Graph graph = testing::TrainingLikeGraph(rng, {.layers = 5});
  MemoryModel model = BuildMemoryModel(graph);
  SubgraphTree tree =
      PartitionGraph(graph, model, graph.program_order, {.node_limit = graph.num_ops()});
  ASSERT_EQ(tree.leaves.size(), 1u);
  EXPECT_FALSE(tree.leaves[0].over_limit);
  EXPECT_EQ(tree.leaves[0].ops, graph.program_order);
}

TEST(Partition, EmptyGraphHasARootAndNoLeaves) {
  Graph graph;
  Finalize(graph, "empty");
  MemoryModel model = BuildMemoryModel(graph);
  SubgraphTree tree = PartitionGraph(graph, model, graph.program_order);
  EXPECT_TRUE(tree.leaves.empty());
  ASSERT_EQ(tree.nodes.size(), 1u);
  EXPECT_EQ(tree.nodes[0].type, NodeType::kRoot);
}

TEST(Partition, RejectsAnOrderThatIsNotTopologicalAndANonPositiveLimit) {
  Graph graph;
  for (int i = 0; i < 2; ++i) graph.ops.push_back(Op{i, "op", Phase::kUnknown, {}, {}});
  Tensor t;
  t.size = 4;
  t.producer = 0;
  t.consumers = {1};
  graph.tensors.push_back(t);
  Finalize(graph, "test");
  MemoryModel model = BuildMemoryModel(graph);
  std::vector<OpId> backwards = {1, 0};
  EXPECT_THROW(PartitionGraph(graph, model, backwards), std::invalid_argument);
  EXPECT_THROW(PartitionGraph(graph, model, graph.program_order, {.node_limit = 0}),
               std::invalid_argument);
}

// A hand-computed case of ROAM eqs 4-6 (alignment 1). Forward f1 f2 f3 make activations of
// 100 bytes each, the loss one of 1; backward b3 b2 b1 free them in mirror order; b3 also
// makes a 60-byte gradient whose update branch is ready in b3's segment.
//   esti_pm = 301. Possibly alive: at b3 301, at b2 200, at b1 100.
//   alpha 1: 301+60 > 301 delay; 200+60 <= 301 -> b2.  alpha 3: 380 > 301; 280 -> b1.
struct SchedulerCase {
  Graph graph;
  OpId b3 = 4, b2 = 5, b1 = 6;
};
SchedulerCase MakeSchedulerCase(const std::string& update_name) {
  SchedulerCase c;
  Graph& g = c.graph;
  const char* names[] = {"f1", "f2", "f3", "aten.nll_loss_forward", "b3", "b2", "b1"};
  Phase phases[] = {Phase::kForward,  Phase::kForward,  Phase::kForward, Phase::kForward,
                    Phase::kBackward, Phase::kBackward, Phase::kBackward};
  for (int i = 0; i < 7; ++i) g.ops.push_back(Op{i, names[i], phases[i], {}, {}});
  g.ops.push_back(Op{7, update_name, Phase::kOptimizer, {}, {}});
  auto tensor = [&](Bytes size, OpId producer, std::vector<OpId> consumers, TensorKind kind,
                    TensorId alias = kNoTensor) {
    Tensor t;
    t.ext_id = g.num_tensors();
    t.size = size;
    t.producer = producer;
    t.consumers = std::move(consumers);
    t.kind = kind;
    t.alias_of = alias;
    g.tensors.push_back(t);
    return g.num_tensors() - 1;
  };
  tensor(64, kNoOp, {0}, TensorKind::kInput);
  tensor(100, 0, {1, 6}, TensorKind::kActivation);  // A1
  tensor(100, 1, {2, 5}, TensorKind::kActivation);  // A2
  tensor(100, 2, {3, 4}, TensorKind::kActivation);  // A3
  tensor(1, 3, {4}, TensorKind::kActivation);       // L
  tensor(10, 4, {5}, TensorKind::kGradient);        // g3
  tensor(60, 4, {7}, TensorKind::kGradient);        // dW
  tensor(10, 5, {6}, TensorKind::kGradient);        // g2
  tensor(10, 6, {}, TensorKind::kGradient);         // g1
  TensorId w = tensor(60, kNoOp, {7}, TensorKind::kWeight);
  tensor(60, 7, {}, TensorKind::kWeight, w);
  Finalize(g, "scheduler");
  return c;
}

TEST(WeightUpdateScheduler, DelaysABranchUntilAlphaTimesItsGradientFitsUnderTheEstimatedPeak) {
  SchedulerCase c = MakeSchedulerCase("aten.add_");
  MemoryModel model = BuildMemoryModel(c.graph, 1);
  auto segment = [&](const PartitionParams& params) {
    SubgraphTree tree = PartitionGraph(c.graph, model, c.graph.program_order, params);
    EXPECT_EQ(tree.estimated_peak, 301);
    EXPECT_EQ(tree.branches.size(), 1u);
    EXPECT_EQ(tree.branches[0].grad_bytes, 60);
    EXPECT_EQ(tree.branches[0].earliest_segment, tree.segment_of_op[U(c.b3)]);
    CheckInvariants(c.graph, model, tree, c.graph.program_order, params.node_limit);
    return std::make_pair(tree.branches[0].segment, tree);
  };
  auto [s1, t1] = segment({.node_limit = 1, .alpha = 1});
  EXPECT_EQ(s1, t1.segment_of_op[U(c.b2)]);
  auto [s3, t3] = segment({.node_limit = 1, .alpha = 3});
  EXPECT_EQ(s3, t3.segment_of_op[U(c.b1)]);
  // A radius above the gradient's size ratio (60 / average 50.1) keeps it where it is ready.
  auto [s_r, t_r] = segment({.node_limit = 1, .alpha = 3, .delay_radius = 2});
  EXPECT_EQ(s_r, t_r.segment_of_op[U(c.b3)]);
  auto [s_off, t_off] = segment({.node_limit = 1, .alpha = 3, .delay_weight_updates = false});
  EXPECT_EQ(s_off, t_off.segment_of_op[U(c.b3)]);
}

TEST(WeightUpdateScheduler, InfersAlphaFromTheOptimizerOps) {
  MemoryModel model;
  SchedulerCase sgd = MakeSchedulerCase("aten.add_");
  model = BuildMemoryModel(sgd.graph, 1);
  EXPECT_EQ(PartitionGraph(sgd.graph, model, sgd.graph.program_order).alpha, 1);
  SchedulerCase adam = MakeSchedulerCase("aten.addcdiv_");
  model = BuildMemoryModel(adam.graph, 1);
  SubgraphTree tree = PartitionGraph(adam.graph, model, adam.graph.program_order);
  EXPECT_EQ(tree.alpha, 3);
  EXPECT_EQ(tree.branches[0].segment, tree.segment_of_op[U(adam.b1)]);
}

TEST(Phases, AreInferredForTrainingGraphsWithoutThem) {
  std::mt19937_64 rng(41);
  for (int trial = 0; trial < 20; ++trial) {
    testing::TrainingGraphOptions options;
    options.layers = 1 + trial % 6;
    options.adam = trial % 2 == 0;
    uint64_t seed = rng();
    std::mt19937_64 a(seed), b(seed);
    Graph with = testing::TrainingLikeGraph(a, options);
    options.phases = false;
    Graph without = testing::TrainingLikeGraph(b, options);
    PhaseInfo info = ResolvePhases(without, BuildDependencies(without), without.program_order);
    EXPECT_TRUE(info.inferred);
    EXPECT_EQ(without.ops[U(info.loss)].name, "aten.nll_loss_forward");
    for (OpId op = 0; op < with.num_ops(); ++op)
      EXPECT_EQ(info.phase[U(op)], with.ops[U(op)].phase)
          << with.ops[U(op)].name << " (op " << op << ")";
  }
}

TEST(Phases, FillUnknownOpsAroundTheFirstBackwardOp) {
  Graph graph;
  Phase given[] = {Phase::kUnknown,  Phase::kForward, Phase::kOther,
                   Phase::kBackward, Phase::kUnknown, Phase::kOptimizer};
  for (int i = 0; i < 6; ++i) graph.ops.push_back(Op{i, "op", given[i], {}, {}});
  Finalize(graph, "test");
  PhaseInfo info = ResolvePhases(graph, BuildDependencies(graph), graph.program_order);
  EXPECT_FALSE(info.inferred);
  EXPECT_EQ(info.phase,
            (std::vector<Phase>{Phase::kForward, Phase::kForward, Phase::kForward, Phase::kBackward,
                                Phase::kBackward, Phase::kOptimizer}));
}

TEST(Phases, WithoutALossOpEverythingIsForward) {
  std::mt19937_64 rng(42);
  Graph graph = testing::RandomGraph(rng, {.ops = 10});
  PhaseInfo info = ResolvePhases(graph, BuildDependencies(graph), graph.program_order);
  EXPECT_TRUE(info.inferred);
  EXPECT_EQ(info.loss, kNoOp);
  for (Phase p : info.phase) EXPECT_EQ(p, Phase::kForward);
}

}  // namespace
}  // namespace roam
