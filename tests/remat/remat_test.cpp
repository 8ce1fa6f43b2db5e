// The remat model (recomputable ops, schedules, rewrite, faithfulness) and the methods against
// brute force on tiny graphs.
#include "remat/remat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "config/config.h"
#include "core/error.h"
#include "core/io.h"
#include "core/memory_model.h"
#include "core/types.h"
#include "gen/generate.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"
#include "tests/remat/brute_force.h"
#include "tests/support/random_graph.h"
#include "tests/support/state_writer_graph.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using testing::ForEachSchedule;

Bytes Peak(const Graph& graph, std::span<const OpId> schedule, Bytes alignment = 1) {
  return testing::SchedulePeak(graph, schedule, alignment);
}

struct Oracle {
  Bytes min_peak = std::numeric_limits<Bytes>::max();
  double min_cost = std::numeric_limits<double>::infinity();  // within the budget
};
Oracle BruteForce(const Graph& graph, Bytes budget, int extra) {
  Oracle o;
  ForEachSchedule(graph, extra, [&](const Schedule& s) {
    Bytes peak = Peak(graph, s);
    o.min_peak = std::min(o.min_peak, peak);
    if (peak <= budget) o.min_cost = std::min(o.min_cost, detail::RecomputeCost(graph, s));
  });
  return o;
}

// A ratio's budget is rounded down (a plan within it is within the ratio), and a ratio a hair
// below an exact product because of floating point (0.8, or 1 - 0.05 four times) costs no byte.
TEST(BudgetOfRatio, RoundsDownButNotAFloatingPointHairBelow) {
  EXPECT_EQ(remat::BudgetOfRatio(1056, 0.8), Bytes{844});  // 844.8
  EXPECT_EQ(remat::BudgetOfRatio(1000, 0.8), Bytes{800});
  EXPECT_EQ(remat::BudgetOfRatio(1000, 1.0 - 0.05 - 0.05 - 0.05 - 0.05), Bytes{800});
  EXPECT_EQ(remat::BudgetOfRatio(3, 1.0 / 3), Bytes{1});
  EXPECT_EQ(remat::BudgetOfRatio(969, 0.0), Bytes{0});
  EXPECT_EQ(remat::BudgetOfRatio(kMaxBytes, 1.0), kMaxBytes);
  EXPECT_FALSE(remat::BudgetOfRatio(1000, -0.1).has_value());
  EXPECT_FALSE(remat::BudgetOfRatio(1000, std::nan("")).has_value());
  EXPECT_FALSE(remat::BudgetOfRatio(kMaxBytes, 2.0).has_value());
}

TEST(Recomputable, ForwardOpsAreButInPlaceOptimizerAndRandomOpsAreNot) {
  Graph g =
      LoadGraph(std::string(std::getenv("ROAM_SOURCE_DIR") ? std::getenv("ROAM_SOURCE_DIR") : ".") +
                "/tests/data/tiny.graph.json");
  // ops: 10 aten.mm, 11 aten.relu_, 12 aten.sum, 13 aten.mm_backward, 14 aten.add_ (optimizer)
  EXPECT_TRUE(IsRecomputable(g, 0));
  EXPECT_TRUE(IsRecomputable(g, 1));  // in place, on an activation: with its storage only
  EXPECT_TRUE(IsRecomputable(g, 2));
  EXPECT_FALSE(IsRecomputable(g, 4));  // optimizer, in place on a weight
}

TEST(Recomputable, AnOpThatAlsoWritesAGraphInputThroughAnAliasIsNot) {
  // A view of a weight (aten.t) aliases a graph input too but makes no fresh memory.
  const testing::StateWriterGraph s = testing::MakeStateWriterGraph("aten.some_op");
  EXPECT_FALSE(IsRecomputable(s.g, s.writer));
  EXPECT_TRUE(IsRecomputable(s.g, s.t));
  RecomputeRule no_skip;
  no_skip.state_update_skipped = false;
  const testing::StateWriterGraph bn = testing::MakeStateWriterGraph("aten.native_batch_norm");
  EXPECT_FALSE(IsRecomputable(bn.g, bn.writer, no_skip));
}

TEST(Recomputable, ABatchNormIsRecomputedWithoutItsRunningStatisticsUpdate) {
  const testing::StateWriterGraph s = testing::MakeStateWriterGraph("aten.native_batch_norm");
  ASSERT_TRUE(IsRecomputable(s.g, s.writer));
  EXPECT_TRUE(IsSkippedStateUpdate(s.g, s.writer, s.update));
  const Schedule schedule = {s.writer, s.t, s.relu, s.writer, s.use};
  ASSERT_EQ(CheckSchedule(s.g, schedule), "");
  const Rewritten rw = Rewrite(s.g, schedule);
  const OpId copy = static_cast<OpId>(s.g.num_ops());
  ASSERT_EQ(rw.graph.recomputes(copy), s.writer);
  ASSERT_EQ(rw.graph.ops[U(copy)].outputs.size(), 1u) << "the copy makes y, not the update";
  EXPECT_EQ(rw.graph.tensors[U(rw.graph.ops[U(copy)].outputs[0])].alias_of, kNoTensor);
  EXPECT_EQ(CheckFaithful(rw.graph, &s.g), "");

  // A copy that updates the statistics again is rejected, as is one of another state writer.
  Graph again = rw.graph;
  Tensor update = again.tensors[U(s.update)];
  update.ext_id = 1000;
  update.producer = copy;
  update.consumers.clear();
  again.tensors.push_back(update);
  again.ops[U(copy)].outputs.push_back(static_cast<TensorId>(again.tensors.size() - 1));
  EXPECT_NE(CheckFaithful(again, &s.g), "");
  const testing::StateWriterGraph other = testing::MakeStateWriterGraph("aten.some_op");
  const Schedule twice = {other.writer, other.t, other.relu, other.writer, other.use};
  EXPECT_THROW(Rewrite(other.g, twice), std::invalid_argument);
}

// Exporters may spell an op with its overload ("aten.native_dropout.default"); the rules read
// the op part (core/op_names.h), so both spellings are treated alike.
TEST(Recomputable, AnOverloadSpellingFollowsTheSameRules) {
  const testing::StateWriterGraph bn =
      testing::MakeStateWriterGraph("aten.native_batch_norm.default");
  EXPECT_TRUE(IsRecomputable(bn.g, bn.writer));
  EXPECT_TRUE(IsSkippedStateUpdate(bn.g, bn.writer, bn.update));
  testing::StateWriterGraph s = testing::MakeStateWriterGraph("aten.some_op");
  s.g.ops[U(s.relu)].name = "aten.native_dropout.default";
  EXPECT_FALSE(IsRecomputable(s.g, s.relu));
  RecomputeRule kept;
  kept.rng_state_kept = true;
  EXPECT_TRUE(IsRecomputable(s.g, s.relu, kept));
}

TEST(Recomputable, DropoutOnlyWhenItsRngStateIsKept) {
  gen::Config config = roam::config::ParseConfig(
      "model: {family: gpt2, n_layer: 1, n_embd: 32, n_head: 2, seq_len: 8, n_positions: 8, "
      "vocab: 50, batch: 1, device: cuda, dropout: 0.1}\ntraining: {optimizer: sgd}\n",
      "<test>");
  Graph g = gen::GenerateGraph(config);
  RecomputeRule kept;
  kept.rng_state_kept = true;
  int dropouts = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    if (g.ops[U(op)].name != "aten.native_dropout") continue;
    ++dropouts;
    EXPECT_TRUE(IsRandom(g.ops[U(op)].name));
    EXPECT_FALSE(IsRecomputable(g, op));
    EXPECT_TRUE(IsRecomputable(g, op, kept));
  }
  EXPECT_GT(dropouts, 0);
  // CPU dropout draws its mask in place (bernoulli_): never recomputed; the mul that applies
  // the kept mask is deterministic and is.
  EXPECT_FALSE(IsRecomputable(g, 0) && IsRandom(g.ops[0].name));
  EXPECT_TRUE(IsRandom("aten.bernoulli_"));
  EXPECT_FALSE(IsRandom("aten.mm"));
}

TEST(Schedule, RejectsMissingOpsEarlyReadsAndRepeatsOfUnrecomputableOps) {
  Graph g = testing::MlpChain(2);  // ops: f0 f1 loss b2 b1
  EXPECT_EQ(CheckSchedule(g, g.program_order), "");
  Schedule missing(g.program_order.begin(), g.program_order.end() - 1);
  EXPECT_NE(CheckSchedule(g, missing).find("never computed"), std::string::npos);
  Schedule early = {1, 0, 2, 3, 4};
  EXPECT_NE(CheckSchedule(g, early).find("before it is computed"), std::string::npos);
  Schedule repeat_backward = {0, 1, 2, 3, 3, 4};
  EXPECT_EQ(CheckSchedule(g, repeat_backward), "");  // backward mm is deterministic too
  Graph tiny =
      LoadGraph(std::string(std::getenv("ROAM_SOURCE_DIR") ? std::getenv("ROAM_SOURCE_DIR") : ".") +
                "/tests/data/tiny.graph.json");
  // relu_ again on the storage it already wrote would apply it twice (it reads the value it
  // overwrote)...
  Schedule twice_in_place = {0, 1, 1, 2, 3, 4};
  EXPECT_NE(CheckSchedule(tiny, twice_in_place).find("in-place write"), std::string::npos);
  // ...but recomputing the storage (mm) and then relu_ on the fresh copy is faithful.
  Schedule storage_again = {0, 1, 2, 0, 1, 3, 4};
  EXPECT_EQ(CheckSchedule(tiny, storage_again), "");
  Rewritten r = Rewrite(tiny, storage_again);
  EXPECT_EQ(CheckFaithful(r.graph, &tiny), "");
  // The optimizer's in-place update of a weight is never recomputed.
  Schedule update_twice = {0, 1, 2, 3, 4, 4};
  EXPECT_NE(CheckSchedule(tiny, update_twice).find("not recomputable"), std::string::npos);
}

TEST(Schedule, RejectsReadingAValueOverwrittenInPlace) {
  // tiny: 10 mm -> t3; 11 relu_ writes t3's storage (t4); 12 sum reads t4; 13 reads t4 and t1;
  // 14 add_ writes weight t1. Recomputing the mm after the optimizer's write reads the new
  // weight, not the one the original read.
  Graph tiny =
      LoadGraph(std::string(std::getenv("ROAM_SOURCE_DIR") ? std::getenv("ROAM_SOURCE_DIR") : ".") +
                "/tests/data/tiny.graph.json");
  Schedule after_write = {0, 1, 2, 3, 4, 0};
  EXPECT_NE(CheckSchedule(tiny, after_write).find("in-place write"), std::string::npos);
}

TEST(Rewrite, CopiesGetNewIdsProvenanceAndTheLaterConsumers) {
  Graph g = testing::MlpChain(2);   // 0 f0, 1 f1, 2 loss, 3 b2, 4 b1
  Schedule s = {0, 1, 2, 0, 3, 4};  // recompute f0 before the backward
  Rewritten r = Rewrite(g, s);
  ASSERT_EQ(r.graph.num_ops(), 6);
  const OpId copy = 5;
  EXPECT_EQ(r.graph.recomputes(copy), 0);
  EXPECT_EQ(r.origin[U(copy)], 0);
  EXPECT_EQ(r.recompute_count[0], 1);
  EXPECT_EQ(r.graph.ops[U(copy)].name, "aten.mm");
  EXPECT_GT(r.graph.ops[U(copy)].ext_id, 4);
  EXPECT_EQ(r.order, (std::vector<OpId>{0, 1, 2, 5, 3, 4}));
  // f0's output (tensor 1) is read by f1 only; the copy's output by both backward ops.
  ASSERT_EQ(r.graph.ops[U(copy)].outputs.size(), 1u);
  const TensorId a0 = r.graph.ops[U(copy)].outputs[0];
  EXPECT_EQ(r.graph.tensors[1].consumers, (std::vector<OpId>{1}));
  EXPECT_EQ(r.graph.tensors[U(a0)].consumers, (std::vector<OpId>{3, 4}));
  EXPECT_EQ(CheckFaithful(r.graph, &g), "");
  // The rewritten graph is an ordinary graph: it round-trips through the file format.
  Graph back = ParseGraph(GraphToJson(r.graph), "rewritten");
  EXPECT_EQ(back.recomputes(copy), 0);
  EXPECT_EQ(CheckFaithful(back, &g), "");
}

TEST(Faithful, RejectsAWrongRewiring) {
  Graph g = testing::MlpChain(3);  // 0 f0, 1 f1, 2 f2, 3 loss, 4 b3, 5 b2, 6 b1
  Rewritten r = Rewrite(g, Schedule{0, 1, 2, 3, 1, 4, 5, 6});
  ASSERT_EQ(CheckFaithful(r.graph, &g), "");
  const OpId copy = 7;
  // Make the copy of f1 read f2's output instead of f0's: it no longer reads what f1 reads.
  Graph bad = r.graph;
  const TensorId a0 = 1, a2 = 3;
  auto& c0 = bad.tensors[U(a0)].consumers;
  c0.erase(std::find(c0.begin(), c0.end(), copy));
  bad.tensors[U(a2)].consumers.push_back(copy);
  std::sort(bad.tensors[U(a2)].consumers.begin(), bad.tensors[U(a2)].consumers.end());
  bad.program_order.clear();
  Finalize(bad, "bad");
  EXPECT_NE(CheckFaithful(bad).find("does not read the values"), std::string::npos);
  // A backward op rewired to a value the original did not read is caught against the original.
  Graph swapped = r.graph;
  const TensorId copy_out = swapped.ops[U(copy)].outputs[0];
  auto& cc = swapped.tensors[U(copy_out)].consumers;  // b2 and b3 read the copy of a1
  ASSERT_FALSE(cc.empty());
  const OpId reader = cc.front();
  cc.erase(cc.begin());
  swapped.tensors[U(a0)].consumers.push_back(reader);
  std::sort(swapped.tensors[U(a0)].consumers.begin(), swapped.tensors[U(a0)].consumers.end());
  swapped.program_order.clear();
  Finalize(swapped, "swapped");
  EXPECT_EQ(CheckFaithful(swapped), "");      // internally consistent copies...
  EXPECT_NE(CheckFaithful(swapped, &g), "");  // ...but not the original's computation
  // A copy of another op's name is rejected.
  Graph renamed = r.graph;
  renamed.ops[U(copy)].name = "aten.relu";
  EXPECT_NE(CheckFaithful(renamed).find("another name"), std::string::npos);
}

// Builds a tiny graph op by op and tensor by tensor, ids in creation order.
struct TinyGraph {
  Graph& g;
  OpId Add(std::string name, Phase phase) {
    g.ops.push_back(Op{static_cast<ExternalId>(g.ops.size()), std::move(name), phase, {}, {}});
    return static_cast<OpId>(g.ops.size() - 1);
  }
  TensorId Tensor(Bytes size, OpId producer, TensorKind kind, std::vector<OpId> readers,
                  TensorId alias_of = kNoTensor) {
    roam::Tensor t;
    t.ext_id = static_cast<ExternalId>(g.tensors.size());
    t.size = size;
    t.producer = producer;
    t.kind = kind;
    t.consumers = std::move(readers);
    t.alias_of = alias_of;
    g.tensors.push_back(t);
    return static_cast<TensorId>(g.tensors.size() - 1);
  }
};

// An activation the backward views again (llama's bf16 weight casts read through `aten.t`):
// 0 f makes a (100), 1 v views it as av, read by 2 g and by the backward's view 5 vb, whose
// avt 6 fb reads. Recomputing f and v before vb frees a at 4 gb (250 -> 210) only if vb's view
// aliases the copy it reads, not the original storage.
struct ViewedAgain {
  Graph g;
  TensorId av = kNoTensor, avt = kNoTensor;
};
ViewedAgain ViewedAgainInTheBackward() {
  ViewedAgain out;
  Graph& g = out.g;
  g.name = "viewed-again";
  TinyGraph b{g};
  auto op = [&](std::string name, Phase phase) { return b.Add(std::move(name), phase); };
  auto tensor = [&](Bytes size, OpId producer, TensorKind kind, std::vector<OpId> readers,
                    TensorId alias_of = kNoTensor) {
    return b.Tensor(size, producer, kind, std::move(readers), alias_of);
  };
  const OpId f = op("aten.mm", Phase::kForward), v = op("aten.t", Phase::kForward),
             gop = op("aten.relu", Phase::kForward), loss = op("aten.sum", Phase::kForward),
             gb = op("aten.mm", Phase::kBackward), vb = op("aten.t", Phase::kBackward),
             fb = op("aten.mm", Phase::kBackward);
  tensor(10, kNoOp, TensorKind::kInput, {f});
  const TensorId a = tensor(100, f, TensorKind::kActivation, {v});
  out.av = tensor(100, v, TensorKind::kActivation, {gop, vb}, a);
  tensor(10, gop, TensorKind::kActivation, {loss});
  tensor(50, loss, TensorKind::kActivation, {gb});
  tensor(100, gb, TensorKind::kGradient, {fb});
  out.avt = tensor(100, vb, TensorKind::kActivation, {fb}, out.av);
  const TensorId gx = tensor(10, fb, TensorKind::kGradient, {});
  g.tensors[U(gx)].output = true;
  Finalize(g, "viewed-again");
  return out;
}

TEST(Rewrite, AnOriginalViewOfACopyAliasesTheCopyAndFreesTheOriginal) {
  const ViewedAgain va = ViewedAgainInTheBackward();
  const Graph& g = va.g;
  const Schedule base = {0, 1, 2, 3, 4, 5, 6};
  const Schedule recomputed = {0, 1, 2, 3, 4, 0, 1, 5, 6};
  ASSERT_EQ(CheckSchedule(g, recomputed), "");
  const Rewritten r = Rewrite(g, recomputed);
  // vb reads the copy of av and its view aliases it; the original a ends at g.
  const TensorId av_copy = r.graph.ops[U(r.order[6])].outputs[0];
  EXPECT_EQ(r.graph.tensors[U(av_copy)].alias_of, r.graph.ops[U(r.order[5])].outputs[0]);
  EXPECT_EQ(r.graph.tensors[U(va.avt)].alias_of, av_copy);
  EXPECT_EQ(CheckFaithful(r.graph, &g), "");
  // A copy of vb itself, after vb aliased the copy of av: the same value, faithful too.
  const Schedule twice = {0, 1, 2, 3, 4, 0, 1, 5, 5, 6};
  ASSERT_EQ(CheckSchedule(g, twice), "");
  EXPECT_EQ(CheckFaithful(Rewrite(g, twice).graph, &g), "");
  EXPECT_EQ(Peak(g, base), 250);        // a, the loss and its gradient at gb
  EXPECT_EQ(Peak(g, recomputed), 210);  // the copy, the gradient and fb's result
  // The greedy's incremental state agrees, built from the schedule or by inserting the copies.
  RematParams params;
  params.alignment = 1;
  const MemoryModel model = BuildMemoryModel(g, params.alignment);
  std::vector<double> costs;
  for (OpId op = 0; op < g.num_ops(); ++op) costs.push_back(OpCost(g, op));
  const detail::Evaluated e = detail::Evaluate(g, recomputed, params);
  detail::GreedyState fresh(g, model, costs, params.rule);
  ASSERT_TRUE(fresh.Reset(recomputed));
  EXPECT_EQ(fresh.Profile(), e.profile);
  detail::GreedyState inserted(g, model, costs, params.rule);
  ASSERT_TRUE(inserted.Reset(base));
  const std::vector<OpId> copies = {0, 1};
  ASSERT_TRUE(inserted.Insert(5, copies));
  ASSERT_EQ(inserted.schedule(), recomputed);
  EXPECT_EQ(inserted.Profile(), e.profile);
  // So the greedy reaches 210 at the brute-force optimum.
  const detail::MethodResult greedy = detail::Greedy(g, base, 210, params);
  EXPECT_EQ(greedy.status, Status::kFeasible);
  EXPECT_DOUBLE_EQ(greedy.recompute_cost, BruteForce(g, 210, 2).min_cost);
  EXPECT_GT(greedy.recompute_cost, 0.0);
  // An original whose result aliases a copy's tensor must read it.
  Graph bad = r.graph;
  const OpId vb = 5;
  auto& readers = bad.tensors[U(av_copy)].consumers;
  readers.erase(std::find(readers.begin(), readers.end(), vb));
  bad.tensors[U(va.av)].consumers.push_back(vb);
  std::sort(bad.tensors[U(va.av)].consumers.begin(), bad.tensors[U(va.av)].consumers.end());
  bad.program_order.clear();
  Finalize(bad, "bad");
  EXPECT_NE(CheckFaithful(bad).find("which it does not read"), std::string::npos)
      << CheckFaithful(bad);
  // Nor may it alias the original while it reads the copy: the copy's storage would end
  // before the view's readers.
  Graph stale = r.graph;
  stale.tensors[U(va.avt)].alias_of = va.av;
  stale.program_order.clear();
  Finalize(stale, "stale");
  EXPECT_NE(CheckFaithful(stale).find("another computation of it"), std::string::npos)
      << CheckFaithful(stale);
}

TEST(Cost, MissingCostsAreTheMemoryBoundEstimate) {
  Graph g = testing::MlpChain(1);  // f0: 100 B in, 100 B out
  EXPECT_DOUBLE_EQ(OpCost(g, 0), kCostPerByte * 200);
  Graph with = testing::MlpChain(1, {7.0});
  EXPECT_DOUBLE_EQ(OpCost(with, 0), 7.0);
}

// The methods against every schedule with up to 2 recomputations, at budgets below, at and
// above the best reachable peak.
TEST(Methods, NeverBeatBruteForceAndNeverExceedTheBudget) {
  std::vector<Graph> graphs = {testing::MlpChain(2), testing::MlpChain(3, {1, 5, 1, 1, 1, 1, 1}),
                               testing::MlpChain(3, {3, 1, 2, 1})};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 3; ++i) {
    const testing::TrainingGraphOptions o = testing::TinyTrainingGraphOptions();
    graphs.push_back(testing::TrainingLikeGraph(rng, o));
  }
  for (const Graph& g : graphs) {
    if (g.num_ops() > 9) continue;  // brute force stays tiny
    RematParams params;
    params.alignment = 1;
    const Bytes no_remat = NoRematPeak(g, params);
    const Oracle all = BruteForce(g, std::numeric_limits<Bytes>::max(), 2);
    for (Bytes budget :
         {all.min_peak - 1, all.min_peak, (all.min_peak + no_remat) / 2, no_remat, no_remat * 2}) {
      const Oracle o = BruteForce(g, budget, 2);
      for (std::string_view method : MethodNames()) {
        params.method = std::string(method);
        RematResult r = PlanRemat(g, budget, params);
        SCOPED_TRACE(g.name + " budget " + std::to_string(budget) + " method " + params.method);
        EXPECT_GE(r.plan.summary.actual_peak, 0);
        EXPECT_EQ(ValidatePlan(r.rewritten.graph, r.plan), "");
        EXPECT_EQ(CheckFaithful(r.rewritten.graph, &g), "");
        EXPECT_EQ(r.plan.order, r.rewritten.order);
        if (r.feasible) {
          EXPECT_LE(r.plan.summary.actual_peak, budget);
          EXPECT_GE(r.recompute_cost + 1e-9, o.min_cost);
        } else {
          EXPECT_GT(r.plan.summary.actual_peak, budget);
        }
        if (budget < all.min_peak) {
          EXPECT_FALSE(r.feasible);
        }
        if (budget >= no_remat) {
          EXPECT_TRUE(r.feasible);
          EXPECT_DOUBLE_EQ(r.compute_overhead, 0.0);
        }
      }
    }
  }
}

TEST(Methods, TheGreedyReachesTheTightBudgetOfAChain) {
  Graph g = testing::MlpChain(4);
  RematParams params;
  params.alignment = 1;
  params.method = "greedy";
  const Oracle all = BruteForce(g, std::numeric_limits<Bytes>::max(), 2);
  const Bytes no_remat = NoRematPeak(g, params);
  ASSERT_LT(all.min_peak, no_remat);
  RematResult r = PlanRemat(g, all.min_peak, params);
  EXPECT_TRUE(r.feasible);
  EXPECT_LE(r.plan.summary.actual_peak, all.min_peak);
  EXPECT_GT(r.compute_overhead, 0.0);
}

// A step whose forward op f reads a weight w that the optimizer updates in place (op 5) before
// the last reader of f's output a (op 6, the weight gradient of g, scheduled late as
// interleaved orders do). Program order: f, g, loss, g_input_grad, f_weight_grad, update of
// w, g_weight_grad. Sizes: a, b, ga 100; l, gw, gg 10. The peak (220) is at op 4, where a
// waits for op 6; recomputing f right before op 6 would read the updated w, right before the
// update it frees a at the peak: 200, the least any schedule reaches.
Graph WeightUpdatedBeforeTheLastRead() {
  Graph g;
  g.name = "update-before-last-read";
  TinyGraph builder{g};
  auto op = [&](std::string name, Phase phase) { return builder.Add(std::move(name), phase); };
  auto tensor = [&](Bytes size, OpId producer, TensorKind kind, std::vector<OpId> readers) {
    return builder.Tensor(size, producer, kind, std::move(readers));
  };
  const OpId f = op("aten.mm", Phase::kForward), gop = op("aten.relu", Phase::kForward),
             loss = op("aten.sum", Phase::kForward), gb = op("aten.mm", Phase::kBackward),
             fb = op("aten.mm", Phase::kBackward), update = op("aten.add_", Phase::kOptimizer),
             gwb = op("aten.mm", Phase::kBackward);
  const TensorId x = tensor(100, kNoOp, TensorKind::kInput, {f, fb});
  const TensorId w = tensor(100, kNoOp, TensorKind::kWeight, {f, update});
  tensor(100, f, TensorKind::kActivation, {gop, gwb});                    // a
  const TensorId b = tensor(100, gop, TensorKind::kActivation, {loss});   // b
  tensor(10, loss, TensorKind::kActivation, {gb, gwb});                   // l
  tensor(100, gb, TensorKind::kGradient, {fb});                           // ga
  tensor(10, fb, TensorKind::kGradient, {update});                        // gw
  const TensorId written = tensor(100, update, TensorKind::kWeight, {});  // w, updated
  const TensorId gg = tensor(10, gwb, TensorKind::kGradient, {});
  g.tensors[U(written)].alias_of = w;
  g.tensors[U(gg)].output = true;
  g.tensors[U(x)].output = false;
  (void)b;
  Finalize(g, "update-before-last-read");
  return g;
}

TEST(Methods, TheGreedysCopyRunsBeforeTheInPlaceWriteOfAWeightItReads) {
  const Graph g = WeightUpdatedBeforeTheLastRead();
  RematParams params;
  params.alignment = 1;
  const Schedule start(g.program_order.begin(), g.program_order.end());
  ASSERT_EQ(Peak(g, start), 220);
  const detail::MethodResult placed = detail::Greedy(g, start, 200, params);
  EXPECT_EQ(placed.status, Status::kFeasible);
  EXPECT_EQ(placed.peak, 200);
  EXPECT_EQ(CheckSchedule(g, placed.schedule, params.rule), "");
  EXPECT_EQ(Peak(g, placed.schedule), 200);
  EXPECT_DOUBLE_EQ(placed.recompute_cost, BruteForce(g, 200, 2).min_cost);
  const detail::MethodResult full =
      detail::Greedy(g, start, 200, params, detail::GreedyEvaluation::kReference);
  EXPECT_EQ(full.schedule, placed.schedule);
  // Without the placement the copy would read the updated weight: the budget is out of reach.
  params.greedy.copy_before_writes = false;
  const detail::MethodResult unplaced = detail::Greedy(g, start, 200, params);
  EXPECT_EQ(unplaced.status, Status::kInfeasible);
  EXPECT_GT(unplaced.peak, 200);
}

// Chains on which the greedy's descent and prune stop above the cheapest schedule (its
// first evictions, made for the peak of the moment, are dearer than needed once the later
// ones are in) and its swap local search finds the brute-force optimum.
TEST(Methods, TheGreedysSwapReachesBruteForceWhereItsDescentStopsAbove) {
  const std::vector<std::vector<double>> all_costs = {
      {9, 8, 6, 4, 3, 4, 1, 7, 9}, {6, 5, 6, 4, 5, 7, 6, 2, 4}, {7, 6, 4, 2, 7, 3, 5, 4, 8}};
  for (const auto& costs : all_costs) {
    const Graph g = testing::MlpChain(4, costs);
    const Schedule start(g.program_order.begin(), g.program_order.end());
    RematParams with;
    with.alignment = 1;
    RematParams without = with;
    without.greedy.swap_attempts = 0;
    const Bytes budget = 500;
    const Oracle o = BruteForce(g, budget, 3);
    const detail::MethodResult descent = detail::Greedy(g, start, budget, without);
    const detail::MethodResult swapped = detail::Greedy(g, start, budget, with);
    ASSERT_EQ(swapped.status, Status::kFeasible);
    EXPECT_GT(descent.recompute_cost, o.min_cost);
    EXPECT_DOUBLE_EQ(swapped.recompute_cost, o.min_cost);
    EXPECT_LE(Peak(g, swapped.schedule), budget);
  }
}

// The peak lower bound (remat/bound.cpp) against every schedule with up to two recomputations
// in every order: at the first step of each op the profile is at least the op's bound, so no
// peak is below the maximum. Random graphs bring views, in-place writes, several outputs and
// graph outputs.
TEST(PeakLowerBound, NoScheduleGoesBelowItAtAnyOpsFirstStep) {
  std::vector<Graph> graphs = {testing::MlpChain(2), testing::MlpChain(3, {1, 5, 1, 1, 1, 1, 1})};
  std::mt19937_64 rng(11);
  for (int i = 0; i < 8; ++i) graphs.push_back(testing::RandomGraph(rng, {.ops = 6}));
  int checked = 0;
  for (const Graph& g : graphs) {
    SCOPED_TRACE(g.name);
    const std::vector<Bytes> bounds = PeakLowerBounds(g, 1);
    RematParams params;
    params.alignment = 1;
    const Bytes bound = PeakLowerBound(g, params);
    ASSERT_EQ(bounds.size(), static_cast<size_t>(g.num_ops()));
    Bytes min_peak = std::numeric_limits<Bytes>::max();
    ForEachSchedule(g, 2, [&](const Schedule& s) {
      Rewritten r = Rewrite(g, s);
      MemoryModel m = BuildMemoryModel(r.graph, 1);
      const auto profile =
          MemoryProfile(m, ComputeLifetimes(r.graph, m, r.order), static_cast<int>(r.order.size()));
      std::vector<char> seen(U(g.num_ops()), 0);
      for (size_t step = 0; step < s.size(); ++step)
        if (!seen[U(s[step])]) {
          seen[U(s[step])] = 1;
          EXPECT_GE(profile[step], bounds[U(s[step])]) << "op " << s[step];
        }
      min_peak = std::min(min_peak, *std::max_element(profile.begin(), profile.end()));
      ++checked;
    });
    EXPECT_GE(min_peak, bound);
    // Where the bound proves a budget out of reach, brute force agrees, and the claim is made.
    ASSERT_GT(bound, 0);
    params.method = "best";
    const RematResult r = PlanRemat(g, bound - 1, params);
    EXPECT_GT(min_peak, bound - 1);
    EXPECT_FALSE(r.feasible);
    EXPECT_EQ(r.status, Status::kInfeasibleProven);
  }
  EXPECT_GT(checked, 1000);
}

// a (7 bytes, a graph output) -> b (3) -> c (4): c's step holds its input, its output and the
// output a made earlier, 14 bytes, which is also the least peak any schedule reaches; a
// budget below it is proven out of reach, one at it is met.
TEST(PeakLowerBound, ABudgetBelowItIsInfeasibleProvenAndOneAtItFits) {
  Graph g;
  g.name = "abc";
  for (int i = 0; i < 3; ++i) {
    g.ops.push_back(Op{i, "aten.mm", Phase::kForward, {}, {}});
    Tensor t;
    t.ext_id = i;
    t.size = std::array<Bytes, 3>{7, 3, 4}[U(i)];
    t.producer = i;
    if (i + 1 < 3) t.consumers = {i + 1};
    g.tensors.push_back(t);
  }
  g.tensors[0].output = true;
  g.tensors[2].output = true;
  Finalize(g, "abc");
  RematParams params;
  params.alignment = 1;
  EXPECT_EQ(PeakLowerBounds(g, 1), (std::vector<Bytes>{7, 10, 14}));
  EXPECT_EQ(PeakLowerBound(g, params), 14);
  for (std::string_view method : MethodNames()) {
    params.method = std::string(method);
    SCOPED_TRACE(params.method);
    const RematResult below = PlanRemat(g, 13, params);
    EXPECT_FALSE(below.feasible);
    EXPECT_EQ(below.status, Status::kInfeasibleProven);
    EXPECT_EQ(below.peak_lower_bound, 14);
    const RematResult at = PlanRemat(g, 14, params);
    EXPECT_TRUE(at.feasible);
    EXPECT_EQ(at.plan.summary.actual_peak, 14);
  }
}

}  // namespace
}  // namespace roam::remat
