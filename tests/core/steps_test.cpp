// Multi-stream steps: the validator's rules, the memory model's lifetimes under steps against
// an independent checker on every step assignment of tiny graphs, and the serialization
// argument that makes the single-stream certified bound valid for multi-stream plans.
#include "core/steps.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <random>

#include "core/error.h"
#include "core/io.h"
#include "core/lower_bound.h"
#include "core/plan.h"
#include "core/types.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

// Every valid step assignment of the graph (each op after its predecessors' steps, steps 0..S-1
// all used), as (order, steps) with the ops sorted by step then by id.
void ForEachStepAssignment(const Graph& graph,
                           const std::function<void(const SteppedOrder&)>& visit) {
  const Dependencies deps = BuildDependencies(graph);
  const int n = graph.num_ops();
  std::vector<Step> step(U(n), kNoStep);
  std::function<void(int)> assign = [&](int k) {
    if (k == n) {
      std::vector<char> used(U(n), 0);
      for (Step s : step) used[U(s)] = 1;
      const int count = static_cast<int>(std::count(used.begin(), used.end(), 1));
      for (int s = 0; s < count; ++s)
        if (!used[U(s)]) return;
      SteppedOrder so;
      so.order.resize(U(n));
      std::iota(so.order.begin(), so.order.end(), 0);
      std::stable_sort(so.order.begin(), so.order.end(),
                       [&](OpId a, OpId b) { return step[U(a)] < step[U(b)]; });
      for (OpId op : so.order) so.steps.push_back(step[U(op)]);
      visit(so);
      return;
    }
    const OpId op = graph.program_order[U(k)];
    Step lo = 0;
    for (OpId p : deps.Preds(op)) lo = std::max(lo, step[U(p)] + 1);
    for (Step s = lo; s < n; ++s) {
      step[U(op)] = s;
      assign(k + 1);
    }
    step[U(op)] = kNoStep;
  };
  assign(0);
}

// The multi-stream peak from the graph alone (not the memory model's Touches or lifetimes): a
// storage, found by following alias_of to its root, is resident from its root producer's step to
// the last step producing or consuming any member, to the end for outputs.
Bytes IndependentPeak(const Graph& graph, Bytes alignment, const SteppedOrder& so) {
  std::vector<Step> step(U(graph.num_ops()));
  for (size_t k = 0; k < so.order.size(); ++k) step[U(so.order[k])] = so.steps[k];
  const Step last = so.steps.empty() ? -1 : so.steps.back();
  auto root = [&](TensorId t) {
    while (graph.tensors[U(t)].alias_of != kNoTensor) t = graph.tensors[U(t)].alias_of;
    return t;
  };
  std::vector<Bytes> live(U(last + 1), 0);
  for (TensorId r = 0; r < graph.num_tensors(); ++r) {
    const Tensor& rt = graph.tensors[U(r)];
    if (root(r) != r || rt.producer == kNoOp || rt.size == 0) continue;
    const Bytes size = (rt.size + alignment - 1) / alignment * alignment;
    const Step start = step[U(rt.producer)];
    Step end = start;
    for (TensorId t = 0; t < graph.num_tensors(); ++t) {
      const Tensor& m = graph.tensors[U(t)];
      if (root(t) != r) continue;
      if (m.output) end = last;
      if (m.producer != kNoOp) end = std::max(end, step[U(m.producer)]);
      for (OpId c : m.consumers) end = std::max(end, step[U(c)]);
    }
    for (Step s = start; s <= end; ++s) live[U(s)] += size;
  }
  return live.empty() ? 0 : *std::max_element(live.begin(), live.end());
}

TEST(Steps, EveryAssignmentOfTinyGraphsMatchesTheIndependentCheckerAndTheBound) {
  std::mt19937_64 rng(29);
  int assignments = 0, concurrent = 0;
  for (int trial = 0; trial < 60; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 2 + trial % 5;
    const Graph graph = testing::RandomGraph(rng, options);
    const Bytes alignment = 1 + trial % 3;
    const MemoryModel model = BuildMemoryModel(graph, alignment);
    const Dependencies deps = BuildDependencies(graph);
    const Bytes bound = CertifiedLowerBound(graph, model, deps).bound;
    const Bytes single_min = testing::BruteForceMinPeak(graph, model);
    Bytes multi_min = std::numeric_limits<Bytes>::max();
    ForEachStepAssignment(graph, [&](const SteppedOrder& so) {
      ++assignments;
      concurrent += MaxConcurrency(so.order, so.steps) > 1;
      ASSERT_EQ(CheckSteps(graph, deps, so.order, so.steps), "") << "trial " << trial;
      const Bytes peak = TheoreticalPeak(graph, model, so.order, so.steps);
      ASSERT_EQ(peak, IndependentPeak(graph, alignment, so)) << "trial " << trial;
      // Serializing the steps (their order, one op per step) never raises the peak.
      ASSERT_LE(TheoreticalPeak(graph, model, so.order), peak) << "trial " << trial;
      ASSERT_LE(bound, peak) << "trial " << trial;
      // A valid plan: any layout on the step lifetimes (here, stacked) passes the validator.
      const auto intervals =
          PlannedIntervals(model, ComputeLifetimes(graph, model, so.order, so.steps));
      std::vector<Bytes> offsets;
      Bytes top = 0;
      for (const Interval& in : intervals) {
        offsets.push_back(top);
        top += in.size;
      }
      const Plan plan = AssemblePlan(graph, model, so.order, offsets, 0.0, so.steps);
      ASSERT_EQ(ValidatePlan(graph, plan), "") << "trial " << trial;
      ASSERT_EQ(plan.summary.theoretical_peak, peak);
      multi_min = std::min(multi_min, peak);
    });
    // One op per step is an assignment, and serialization never raises the peak: the best
    // multi-stream peak is the best single-stream one.
    EXPECT_EQ(multi_min, single_min) << "trial " << trial;
  }
  EXPECT_GT(concurrent, 100) << "the trials must exercise concurrent steps";
  EXPECT_GT(assignments, concurrent);
}

TEST(Steps, AsapStepsAreValidAndAsSoonAsPossible) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 80; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 1 + trial % 12;
    const Graph graph = testing::RandomGraph(rng, options);
    const Dependencies deps = BuildDependencies(graph);
    for (int k : {0, 1, 2}) {
      const SteppedOrder so = AsapSteps(graph, deps, graph.program_order, k);
      ASSERT_EQ(CheckTopological(graph, deps, so.order), "");
      ASSERT_EQ(CheckSteps(graph, deps, so.order, so.steps), "");
      if (k > 0) {
        EXPECT_LE(MaxConcurrency(so.order, so.steps), k);
      }
      if (k == 1) {
        EXPECT_EQ(so.order, graph.program_order);
      }
      if (k != 0) continue;
      // Unbounded: each op's step is its longest path from a source.
      std::vector<Step> step(U(graph.num_ops()));
      for (size_t i = 0; i < so.order.size(); ++i) step[U(so.order[i])] = so.steps[i];
      for (OpId op : graph.program_order) {
        Step want = 0;
        for (OpId p : deps.Preds(op)) want = std::max(want, step[U(p)] + 1);
        EXPECT_EQ(step[U(op)], want);
      }
    }
  }
}

// Two independent branches after a shared input: the diamond test graph.
class StepValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = LoadGraph(testing::DataPath("diamond.graph.json"));
    deps_ = BuildDependencies(graph_);
    model_ = BuildMemoryModel(graph_, 1);
  }
  TensorId TensorOf(ExternalId ext) const {
    for (TensorId t = 0; t < graph_.num_tensors(); ++t)
      if (graph_.tensors[U(t)].ext_id == ext) return t;
    return kNoTensor;
  }
  // Ops by external id.
  OpId Op(ExternalId ext) const {
    for (OpId op = 0; op < graph_.num_ops(); ++op)
      if (graph_.ops[U(op)].ext_id == ext) return op;
    return kNoOp;
  }
  std::string Check(std::vector<ExternalId> order, std::vector<Step> steps) const {
    std::vector<OpId> ops;
    for (ExternalId e : order) ops.push_back(Op(e));
    return CheckSteps(graph_, deps_, ops, steps);
  }
  Graph graph_;
  Dependencies deps_;
  MemoryModel model_;
};

TEST_F(StepValidation, AcceptsIndependentOpsSharingAStep) {
  EXPECT_EQ(Check({1, 2, 3, 4}, {0, 1, 1, 2}), "");
  EXPECT_EQ(Check({1, 2, 3, 4}, {0, 1, 2, 3}), "");
}

TEST_F(StepValidation, RejectsDependentOpsInOneStep) {
  const std::string problem = Check({1, 2, 3, 4}, {0, 0, 1, 2});
  EXPECT_NE(problem.find("must be independent"), std::string::npos) << problem;
  EXPECT_NE(problem.find("op 2"), std::string::npos) << problem;
}

TEST_F(StepValidation, RejectsAStepOutOfOrderASkippedStepAndAWrongCount) {
  EXPECT_NE(Check({1, 2, 3, 4}, {0, 2, 1, 3}).find("never decrease"), std::string::npos);
  EXPECT_NE(Check({1, 2, 3, 4}, {0, 1, 1, 3}).find("skip none"), std::string::npos);
  EXPECT_NE(Check({1, 2, 3, 4}, {1, 2, 2, 3}).find("start at 0"), std::string::npos);
  EXPECT_NE(Check({1, 2, 3, 4}, {0, 1, 1}).find("entries"), std::string::npos);
}

TEST_F(StepValidation, ConcurrentOpsKeepTheirOutputsResidentTogether) {
  const std::vector<OpId> order = {Op(1), Op(2), Op(3), Op(4)};
  // Serially the peak is at d (b's 200 + c's 300 + d's 10); with b and c in one step, a's 100
  // (read by b) is resident beside both.
  EXPECT_EQ(TheoreticalPeak(graph_, model_, order), 510);
  EXPECT_EQ(TheoreticalPeak(graph_, model_, order, std::vector<Step>{0, 1, 1, 2}), 600);
  EXPECT_EQ(NumSteps(order, std::vector<Step>{0, 1, 1, 2}), 3);
  EXPECT_EQ(NumSteps(order, {}), 4);
  const auto life = ComputeLifetimes(graph_, model_, order, std::vector<Step>{0, 1, 1, 2});
  // d's output is an output: resident to the last step.
  EXPECT_EQ(life[U(model_.storage_of[U(TensorOf(104))])], (Lifetime{2, 2}));
  EXPECT_EQ(life[U(model_.storage_of[U(TensorOf(101))])], (Lifetime{0, 1}));
  EXPECT_EQ(life[U(model_.storage_of[U(TensorOf(103))])], (Lifetime{1, 2}));
}

TEST_F(StepValidation, ValidatorChecksTheLayoutOnStepLifetimes) {
  const std::vector<OpId> order = {Op(1), Op(2), Op(3), Op(4)};
  // c's output reuses a's address: a's output is dead once b ran, serially.
  std::vector<Bytes> offsets;
  for (StorageId sid : model_.planned) {
    const ExternalId root = graph_.tensors[U(model_.storages[U(sid)].root)].ext_id;
    offsets.push_back(root == 101 ? 0 : root == 102 ? 300 : root == 103 ? 0 : 500);
  }
  Plan serial = AssemblePlan(graph_, model_, order, offsets, 0.0);
  EXPECT_EQ(ValidatePlan(graph_, serial), "");
  // With b and c in one step, a's and c's outputs are resident together.
  Plan multi = AssemblePlan(graph_, model_, order, offsets, 0.0, {0, 1, 1, 2});
  EXPECT_NE(ValidatePlan(graph_, multi).find("overlap"), std::string::npos)
      << ValidatePlan(graph_, multi);
  // Steps out of order or dependent ops in one step are named.
  serial.steps = {0, 0, 1, 2};
  EXPECT_NE(ValidatePlan(graph_, serial).find("steps:"), std::string::npos);
}

TEST_F(StepValidation, PlansRoundTripWithStepsAndWithout) {
  const std::vector<OpId> order = {Op(1), Op(3), Op(2), Op(4)};
  std::vector<Bytes> offsets = {0, 100, 300, 600};
  const Plan multi = AssemblePlan(graph_, model_, order, offsets, 0.0, {0, 0, 1, 2});
  ASSERT_EQ(ValidatePlan(graph_, multi), "");
  const std::string text = PlanToJson(graph_, multi);
  EXPECT_NE(text.find("\"steps\""), std::string::npos);
  const Plan back = ParsePlan(text, "multi.plan.json", graph_);
  EXPECT_EQ(back.order, multi.order);
  EXPECT_EQ(back.steps, multi.steps);
  EXPECT_EQ(back.buffers, multi.buffers);
  EXPECT_EQ(PlanToJson(graph_, back), text);
  // Without steps: no "steps" key, and the text reads back single-stream.
  const Plan single = AssemblePlan(graph_, model_, order, offsets, 0.0);
  const std::string single_text = PlanToJson(graph_, single);
  EXPECT_EQ(single_text.find("steps"), std::string::npos);
  EXPECT_TRUE(ParsePlan(single_text, "single.plan.json", graph_).steps.empty());
}

TEST_F(StepValidation, ParserNamesTheFileAndTheFieldOfBadSteps) {
  const std::vector<OpId> order = {Op(1), Op(3), Op(2), Op(4)};
  const Plan multi =
      AssemblePlan(graph_, model_, order, std::vector<Bytes>{0, 100, 300, 600}, 0.0, {0, 0, 1, 2});
  auto with_steps = [&](const std::string& steps) {
    std::string text = PlanToJson(graph_, multi);
    const size_t at = text.find("\"steps\"");
    const size_t end = text.find(']', at);
    return text.substr(0, at) + "\"steps\": " + steps + text.substr(end + 1);
  };
  auto error = [&](const std::string& steps) {
    try {
      ParsePlan(with_steps(steps), "p.json", graph_);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("[0, 0, 1]").find("p.json: field \"steps\" has 3 entries, order has 4"),
            std::string::npos)
      << error("[0, 0, 1]");
  EXPECT_NE(error("[0, -1, 1, 2]").find("p.json: steps[1]: must be a step"), std::string::npos);
  EXPECT_NE(error("[0, \"x\", 1, 2]").find("steps[1]"), std::string::npos);
  EXPECT_NE(error("3").find("must be an array"), std::string::npos);
}

}  // namespace
}  // namespace roam
