#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "batch/batch.h"
#include "core/io.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"
#include "tests/support/training_graph.h"

namespace roam::batch {
namespace {

using roam::testing::DataPath;
using roam::testing::TempDirTest;

RunSpec Spec(const std::string& input, Mode mode = Mode::kHeuristic) {
  return BatchSpecs({input}, {}, mode).front();
}

TEST(RunTest, BaselinesMatchTheEvaluateCommandsPlans) {
  Graph graph = LoadGraph(DataPath("tiny.graph.json"));
  MemoryModel model = BuildMemoryModel(graph);
  RunRecord r = ExecuteRun(Spec(DataPath("tiny.graph.json")));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.graph, "tiny");
  EXPECT_EQ(r.ops, 5);
  EXPECT_EQ(r.persistent_bytes, 3072);
  // PyTorch: program order, caching-allocator layout.
  std::vector<OpId> order = ScheduleOrder("program", graph, model);
  auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, order));
  Plan pytorch = AssemblePlan(graph, model, order, PlaceBuffers("pytorch", intervals, 512), 0);
  EXPECT_EQ(r.pytorch.total_peak, pytorch.summary.total_peak);
  // The worked example of docs/memory-model.md: theoretical 3072 and no fragmentation.
  EXPECT_EQ(r.heuristic.total_peak, 6144);
  EXPECT_EQ(r.result.total_peak, r.heuristic.total_peak);
  EXPECT_LE(r.lower_bound, r.result.theoretical_peak);
  EXPECT_EQ(r.seconds.size(), 1u);
}

TEST(RunTest, TheBoundNeverExceedsAnyOrdersPeak) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 20; ++i) {
    Graph graph = roam::testing::TrainingLikeGraph(rng);
    MemoryModel model = BuildMemoryModel(graph);
    Bytes bound = CertifiedLowerBound(graph, model);
    EXPECT_GT(bound, 0);
    for (std::string_view name : OrderNames())
      EXPECT_LE(bound, TheoreticalPeak(graph, model, ScheduleOrder(name, graph, model))) << name;
  }
}

TEST(RunTest, RepeatsTimeTheModeEachTime) {
  RunSpec spec = Spec(DataPath("tiny.graph.json"));
  spec.repeats = 3;
  EXPECT_EQ(ExecuteRun(spec).seconds.size(), 3u);
}

TEST(RunTest, FailuresAreRecordsNotExceptions) {
  RunRecord missing = ExecuteRun(Spec("/nonexistent/x.graph.json"));
  EXPECT_FALSE(missing.ok);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.error.find("/nonexistent/x.graph.json"), std::string::npos);
  RunSpec set_on_graph = Spec(DataPath("tiny.graph.json"));
  set_on_graph.overrides = {"model.batch=2"};
  RunRecord r = ExecuteRun(set_on_graph);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.exit_code, 2);
}

TEST(RunTest, MemoryOverTimePeaksAtTheTotalTheoreticalPeak) {
  Graph graph = LoadGraph(DataPath("tiny.graph.json"));
  RunPlans plans;
  ASSERT_TRUE(ExecuteRun(Spec(DataPath("tiny.graph.json")), &plans).ok);
  std::vector<Bytes> m = MemoryOverTime(plans.graph, plans.plan);
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(*std::max_element(m.begin(), m.end()),
            plans.plan.summary.persistent_bytes + plans.plan.summary.theoretical_peak);
}

// planner.streams=multi: the baselines run with as-soon-as-possible steps, every plan carries
// steps, and memory over time counts steps.
TEST(RunTest, MultiStreamRunsHaveSteppedBaselinesAndPlans) {
  for (Mode mode : {Mode::kHeuristic, Mode::kRoam}) {
    RunPlans plans;
    const RunSpec spec = BatchSpecs({DataPath("diamond.graph.json")},
                                    {"planner.streams=multi", "planner.alignment=1"}, mode)
                             .front();
    RunRecord r = ExecuteRun(spec, &plans);
    ASSERT_TRUE(r.ok) << r.error;
    // a and c have no inputs but the weight: both run at step 0.
    EXPECT_EQ(plans.pytorch.steps, (std::vector<Step>{0, 0, 1, 2}));
    EXPECT_EQ(r.pytorch.theoretical_peak, 100 + 200 + 300);  // a, b and c's outputs at step 1
    for (const Plan* p : {&plans.pytorch, &plans.heuristic, &plans.plan}) {
      EXPECT_EQ(ValidatePlan(plans.graph, *p), "");
      EXPECT_EQ(p->steps.size(), p->order.size());
      EXPECT_EQ(MemoryOverTime(plans.graph, *p).size(), size_t(p->steps.back() + 1));
    }
    if (mode == Mode::kRoam) {
      // c after b: at most b's, c's and d's outputs (a's dead), so b and c share no step.
      EXPECT_EQ(r.result.theoretical_peak, 200 + 300 + 10);
    }
  }
}

TEST(RunTest, BatchNamesAreFileStemsMadeUniqueWhenTheyClash) {
  std::vector<RunSpec> s = BatchSpecs({"a/x.yaml", "b/x.yaml", "c/y.graph.json"}, {}, Mode::kModel);
  EXPECT_NE(s[0].name, s[1].name);
  EXPECT_EQ(s[0].name.rfind("x-", 0), 0u);
  EXPECT_EQ(s[2].name, "y");
  EXPECT_EQ(s[2].key, "c/y.graph.json --mode model");
}

TEST(RunnerTest, DividesTheCoresBetweenJobsAndTheirThreads) {
  EXPECT_EQ(DivideCores(0, 0, 100, 16), std::make_pair(16, 1));
  EXPECT_EQ(DivideCores(0, 0, 4, 16), std::make_pair(4, 4));
  EXPECT_EQ(DivideCores(2, 0, 100, 16), std::make_pair(2, 8));
  EXPECT_EQ(DivideCores(0, 4, 100, 16), std::make_pair(4, 4));
  EXPECT_EQ(DivideCores(0, 32, 100, 16), std::make_pair(1, 32));
  EXPECT_EQ(DivideCores(3, 5, 1, 2), std::make_pair(3, 5));
  EXPECT_EQ(DivideCores(0, 0, 0, 0), std::make_pair(1, 1));
}

TEST(RunnerTest, ProgressBarShowsDoneTotalFailuresElapsedAndEta) {
  EXPECT_EQ(FormatProgress({5, 10, 1, 65.0}, 10),
            "[#####.....] 5/10 runs, 1 failed, 1:05 elapsed, ETA 1:05");
  EXPECT_EQ(FormatProgress({0, 3, 0, 0.0}, 4), "[....] 0/3 runs, 0 failed, 0:00 elapsed, ETA ?");
  EXPECT_EQ(FormatProgress({3, 3, 0, 3700.0}, 4),
            "[####] 3/3 runs, 0 failed, 1:01:40 elapsed, ETA 0:00");
}

class RunnerFilesTest : public TempDirTest {
 protected:
  std::vector<RunSpec> Specs(int graphs) {
    std::mt19937_64 rng(11);
    std::vector<std::string> inputs;
    for (int i = 0; i < graphs; ++i) {
      roam::testing::TrainingGraphOptions options;
      options.layers = 3 + i % 4;
      Graph g = roam::testing::TrainingLikeGraph(rng, options);
      g.name = "g" + std::to_string(i);
      inputs.push_back(Write("g" + std::to_string(i) + ".graph.json", GraphToJson(g)));
    }
    inputs.push_back(Write("broken.graph.json", "{\"format\": \"roam-graph-v1\""));
    return BatchSpecs(inputs, {}, Mode::kHeuristic);
  }
  RunnerParams Params(int jobs, int threads, const std::string& dir) const {
    RunnerParams p;
    p.jobs = jobs;
    p.threads_per_job = threads;
    p.out_dir = Path(dir);
    return p;
  }
  static std::string WithoutTimings(RunRecord r) {
    r.seconds.assign(r.seconds.size(), 0.0);
    r.baseline_seconds = 0.0;
    return RecordToJson(r);
  }
};

// The parallel runner against its sequential reference (one job): same records, same files.
TEST_F(RunnerFilesTest, BatchConcurrencyJobsDoNotChangeTheResults) {
  std::vector<RunSpec> specs = Specs(8);
  RunnerParams one = Params(1, 1, "one"), many = Params(3, 2, "many");
  std::vector<RunRecord> a = RunAll(specs, one), b = RunAll(specs, many);
  ASSERT_EQ(a.size(), specs.size());
  ASSERT_EQ(b.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    EXPECT_EQ(WithoutTimings(a[i]), WithoutTimings(b[i])) << i;
    EXPECT_EQ(a[i].ok, i + 1 < specs.size());
    if (!a[i].ok) continue;
    Graph g = LoadGraph(specs[i].input);
    Plan p1 = LoadPlan(Path("one/plans/" + specs[i].name + ".plan.json"), g);
    Plan p2 = LoadPlan(Path("many/plans/" + specs[i].name + ".plan.json"), g);
    EXPECT_EQ(ValidatePlan(g, p2), "");
    EXPECT_EQ(p1.order, p2.order);
    EXPECT_EQ(p1.buffers, p2.buffers);
  }
}

// Roam mode nests a oneTBB arena (the optimizer's leaf fan-out) inside each job's: the jobs and
// their leaf solves must not interfere (CI runs this under ThreadSanitizer). Every leaf is
// solved to proven optimality, so the plans must be the ones a single job on one thread makes.
TEST_F(RunnerFilesTest, BatchConcurrencyRoamModeNestsOneArenaPerJobWithoutChangingPlans) {
  const std::string config = std::string(ROAM_CONFIGS_DIR) + "/gpt2-small.yaml";
  std::vector<std::string> overrides = {"model.n_layer=1",
                                        "model.n_embd=64",
                                        "model.n_head=2",
                                        "model.vocab=256",
                                        "planner.bound_shortcut=false",
                                        "planner.partition.node_limit=12",
                                        "planner.leaf_order.time_limit_s=30",
                                        "planner.time_limit_s=0"};
  std::vector<RunSpec> specs;
  for (int seq : {16, 32}) {
    std::vector<std::string> o = overrides;
    o.push_back("model.seq_len=" + std::to_string(seq));
    RunSpec spec = BatchSpecs({config}, o, Mode::kRoam).front();
    spec.name = "seq" + std::to_string(seq);
    specs.push_back(spec);
  }
  std::vector<RunRecord> a = RunAll(specs, Params(1, 1, "one"));
  std::vector<RunRecord> b = RunAll(specs, Params(2, 2, "many"));
  ASSERT_EQ(a.size(), specs.size());
  ASSERT_EQ(b.size(), specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    ASSERT_TRUE(a[i].ok) << a[i].error;
    ASSERT_TRUE(b[i].ok) << b[i].error;
    auto figure = [&](const std::string& name) {
      for (const auto& [key, value] : a[i].figures)
        if (key == name) return std::stoi(value);
      ADD_FAILURE() << "no figure " << name;
      return 0;
    };
    ASSERT_GT(figure("leaves_sent_to_solver"), 1) << "the leaves must reach the solver";
    EXPECT_EQ(figure("leaves_proved_optimal"), figure("leaves_sent_to_solver"));
    EXPECT_EQ(WithoutTimings(a[i]), WithoutTimings(b[i])) << i;
  }
}

TEST_F(RunnerFilesTest, ProgressCountsEveryRunAndEveryFailure) {
  std::vector<RunSpec> specs = Specs(3);
  std::vector<Progress> seen;
  RunAll(specs, Params(2, 1, "out"), [&](const Progress& p) { seen.push_back(p); });
  ASSERT_EQ(seen.size(), specs.size());
  EXPECT_EQ(seen.back().done, 4);
  EXPECT_EQ(seen.back().total, 4);
  EXPECT_EQ(seen.back().failed, 1);
}

TEST_F(RunnerFilesTest, ResumeSkipsValidRunsAndRedoesDamagedOnes) {
  std::vector<RunSpec> specs = Specs(3);
  RunnerParams params = Params(1, 1, "out");
  RunAll(specs, params);
  // As a killed batch leaves it: one run never finished (no record), one plan damaged.
  std::filesystem::remove(Path("out/runs/" + specs[0].name + ".json"));
  WriteFileAtomically(Path("out/plans/" + specs[1].name + ".plan.json"), "{}");
  std::vector<RunRecord> again = RunAll(specs, params);
  EXPECT_FALSE(again[0].resumed);
  EXPECT_FALSE(again[1].resumed);
  EXPECT_TRUE(again[2].resumed);
  EXPECT_FALSE(again[3].resumed);  // failed runs are always retried
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(again[static_cast<size_t>(i)].ok);
  params.force = true;
  for (const RunRecord& r : RunAll(specs, params)) EXPECT_FALSE(r.resumed);
}

}  // namespace
}  // namespace roam::batch
