// The subgraph tree: its invariants on random and training-like graphs, the weight-update
// scheduler (ROAM eqs 4-6) on a hand-computed case, phase inference and edge cases.
#include "partition/partition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

#include "core/types.h"
#include "tests/partition/invariants.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"
#include "tests/support/training_graph.h"

namespace roam {
namespace {

using testing::CheckPartitionInvariants;
using testing::PartitionAndCheck;

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
    CheckPartitionInvariants(graph, model, tree, order, params.node_limit);
  }
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

// A training step in miniature with every kind of op that hides split points: the first op
// reads only graph inputs, a mask computed from a buffer is read in both passes, a forward op
// makes a tensor only the backward pass reads (a saved-for-backward detach, say) and a backward
// op reads only it, and a chain of two backward ops feeds nothing on the trunk.
TEST(Partition, BindsMasksSavedTensorBridgesAndSinkChainsSoEveryTrunkOpIsASplitPoint) {
  enum : OpId { a, b, d, m, c, loss, seed, gc, s1, s2, e, gb, ga, gz };
  Graph g;
  const char* names[] = {"a",  "b",  "d",  "m", "c",  "loss", "seed",
                         "gc", "s1", "s2", "e", "gb", "ga",   "gz"};
  for (OpId op = a; op <= gz; ++op)
    g.ops.push_back(Op{op, names[op], op <= loss ? Phase::kForward : Phase::kBackward, {}, {}});
  auto tensor = [&](OpId producer, std::vector<OpId> consumers, TensorKind kind) {
    Tensor t;
    t.ext_id = g.num_tensors();
    t.size = 100;
    t.producer = producer;
    t.consumers = std::move(consumers);
    t.kind = kind;
    g.tensors.push_back(t);
  };
  tensor(kNoOp, {a}, TensorKind::kInput);
  tensor(kNoOp, {m}, TensorKind::kInput);  // the buffer the mask comes from
  tensor(a, {b, ga}, TensorKind::kActivation);
  tensor(b, {d, c}, TensorKind::kActivation);
  tensor(d, {e}, TensorKind::kActivation);
  tensor(m, {c, gc}, TensorKind::kActivation);
  tensor(c, {loss}, TensorKind::kActivation);
  tensor(loss, {seed}, TensorKind::kActivation);
  tensor(seed, {gc}, TensorKind::kGradient);
  tensor(gc, {s1, gb}, TensorKind::kGradient);
  tensor(s1, {s2}, TensorKind::kGradient);
  tensor(s2, {}, TensorKind::kGradient);
  tensor(e, {gb}, TensorKind::kGradient);
  tensor(gb, {ga}, TensorKind::kGradient);
  tensor(ga, {gz}, TensorKind::kGradient);
  tensor(gz, {}, TensorKind::kGradient);
  Finalize(g, "bindings");
  MemoryModel model = BuildMemoryModel(g, 1);
  for (int limit : {1, 3, 100}) {
    SubgraphTree tree = PartitionGraph(g, model, g.program_order, {.node_limit = limit});
    CheckPartitionInvariants(g, model, tree, g.program_order, limit);
    EXPECT_EQ(tree.insensitive, (std::vector<OpId>{b, c, loss, seed, gc, gb, ga, gz}));
    EXPECT_EQ(tree.forward_end, loss);
    EXPECT_EQ(tree.backward_start, seed);
    auto role = [&](OpId op) { return tree.role[U(op)]; };
    EXPECT_EQ(role(a), OpRole::kFloatingSource);
    EXPECT_EQ(role(m), OpRole::kFloatingSource);
    EXPECT_EQ(role(d), OpRole::kFloatingBridge);
    EXPECT_EQ(role(e), OpRole::kFloatingBridge);
    EXPECT_EQ(role(s1), OpRole::kFloatingSink);
    EXPECT_EQ(role(s2), OpRole::kFloatingSink);
    // Sources with their first consumer, bridges where the input order has them, sinks with
    // their latest bound predecessor.
    auto seg = [&](OpId op) { return tree.segment_of_op[U(op)]; };
    EXPECT_EQ(seg(a), seg(b));
    EXPECT_EQ(seg(m), seg(c));
    EXPECT_EQ(seg(d), seg(b));
    EXPECT_EQ(seg(e), seg(gc));
    EXPECT_EQ(seg(s1), seg(gc));
    EXPECT_EQ(seg(s2), seg(gc));
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
  CheckPartitionInvariants(graph, model, tree, graph.program_order, 4);
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
    CheckPartitionInvariants(c.graph, model, tree, c.graph.program_order, params.node_limit);
    return std::make_pair(tree.branches[0].segment, tree);
  };
  auto [s1, t1] = segment({.node_limit = 1, .alpha = 1});
  EXPECT_EQ(s1, t1.segment_of_op[U(c.b2)]);
  auto [s3, t3] = segment({.node_limit = 1, .alpha = 3});
  EXPECT_EQ(s3, t3.segment_of_op[U(c.b1)]);
  // A radius above the gradient's size ratio (60 / average 50.1) keeps it where it is ready.
  auto [s_r, t_r] = segment({.node_limit = 1, .alpha = 3, .delay_radius = 2});
  EXPECT_EQ(s_r, t_r.segment_of_op[U(c.b3)]);
  auto [s_off, t_off] =
      segment({.node_limit = 1, .alpha = 3, .update_placement = UpdatePlacement::kWhenReady});
  EXPECT_EQ(s_off, t_off.segment_of_op[U(c.b3)]);
  auto [s_end, t_end] =
      segment({.node_limit = 1, .alpha = 1, .update_placement = UpdatePlacement::kAtEnd});
  EXPECT_EQ(s_end, t_end.num_segments - 1);
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
