// Multi-stream plans end to end: packing keeps the peak and the layout, the optimizer's plans
// are valid with steps and never above the multi-stream baselines, MODeL-MS, the CLI.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "baseline/layouts.h"
#include "core/io.h"
#include "core/steps.h"
#include "optimizer/optimizer.h"
#include "optimizer/pack_steps.h"
#include "tests/optimizer/support.h"
#include "tests/support/random_graph.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

using testing::ExpectTruthful;
using testing::Preset;
const std::string kConfigs = ROAM_CONFIGS_DIR;

// Every multi-stream result: valid with steps, within the limit, never above either
// multi-stream baseline, the bound below it; in roam mode, every label true as well. (A model
// mode order the ILP proves optimal is labelled so above the bound, in either scenario.)
void ExpectMultiStream(const Graph& graph, const OptimizerParams& params, const OptimizeResult& r) {
  EXPECT_EQ(r.streams, Streams::kMulti);
  EXPECT_EQ(ValidatePlan(graph, r.plan), "");
  ASSERT_EQ(r.plan.steps.size(), r.plan.order.size());
  if (params.max_concurrency > 0) {
    EXPECT_LE(MaxConcurrency(r.plan.order, r.plan.steps), params.max_concurrency);
  }
  EXPECT_LE(r.lower_bound, r.plan.summary.theoretical_peak);
  for (const PlanFigures& b : r.baselines)
    EXPECT_LE(r.plan.summary.total_peak, b.summary.total_peak);
  if (r.mode == OptimizeMode::kRoam) {
    ExpectTruthful(graph, r);
  }
}

TEST(PackSteps, KeepsThePeaksAndTheLayoutAndRespectsTheLimit) {
  std::mt19937_64 rng(11);
  int packed = 0;
  for (int trial = 0; trial < 200; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 2 + trial % 14;
    const Graph graph = testing::RandomGraph(rng, options);
    const MemoryModel model = BuildMemoryModel(graph, 1 + trial % 4);
    const Dependencies deps = BuildDependencies(graph);
    const auto intervals =
        PlannedIntervals(model, ComputeLifetimes(graph, model, graph.program_order));
    const char* layout = trial % 2 == 0 ? "best-fit" : "llfb";
    const Plan serial = AssemblePlan(graph, model, graph.program_order,
                                     PlaceBuffers(layout, intervals, model.alignment), 0.0);
    for (int k : {0, 1, 2, 3}) {
      const Plan p = opt::PackSteps(graph, model, deps, serial, k);
      ASSERT_EQ(ValidatePlan(graph, p), "") << "trial " << trial << " k " << k;
      ASSERT_EQ(p.order, serial.order);
      ASSERT_EQ(p.steps.size(), p.order.size());
      EXPECT_EQ(p.summary.theoretical_peak, serial.summary.theoretical_peak) << "trial " << trial;
      EXPECT_EQ(p.summary.actual_peak, serial.summary.actual_peak) << "trial " << trial;
      if (k > 0) {
        EXPECT_LE(MaxConcurrency(p.order, p.steps), k);
      }
      if (k == 1) {
        EXPECT_EQ(NumSteps(p.order, p.steps), graph.num_ops());
      }
      packed += MaxConcurrency(p.order, p.steps) > 1;
    }
  }
  EXPECT_GT(packed, 50) << "packing must put ops together where it can";
}

// Small random graphs: the optimum over every step assignment is the single-stream optimum, and
// both modes reach it; every plan is valid with steps and never above the multi baselines.
TEST(MultiStream, BothModesGetTheBruteForceOptimumWithValidSteps) {
  std::mt19937_64 rng(12);
  for (int trial = 0; trial < 20; ++trial) {
    testing::RandomGraphOptions options;
    options.ops = 3 + trial % 5;
    const Graph graph = testing::RandomGraph(rng, options);
    const MemoryModel model = BuildMemoryModel(graph, 1);
    const Bytes best = testing::BruteForceMinPeak(graph, model);
    for (OptimizeMode mode : {OptimizeMode::kRoam, OptimizeMode::kModel}) {
      OptimizerParams params;
      params.alignment = 1;
      params.time_limit = 0;
      params.mode = mode;
      params.streams = Streams::kMulti;
      params.max_concurrency = trial % 3;  // 0 (unbounded), 1, 2
      const OptimizeResult r = Optimize(graph, params);
      EXPECT_EQ(r.plan.summary.theoretical_peak, best)
          << "trial " << trial << " mode " << ToString(mode);
      ExpectMultiStream(graph, params, r);
    }
  }
}

TEST(MultiStream, BaselinesRunAsSoonAsPossibleAndThePipelineIsNeverAboveThem) {
  const Graph graph =
      Preset("gpt2-small.yaml", {"model.n_layer=1", "model.seq_len=32", "model.n_embd=64",
                                 "model.n_head=2", "model.vocab=256"});
  OptimizerParams params;
  params.time_limit = 60;
  params.streams = Streams::kMulti;
  const OptimizeResult multi = Optimize(graph, params);
  ExpectMultiStream(graph, params, multi);
  EXPECT_GT(MaxConcurrency(multi.plan.order, multi.plan.steps), 1);
  // The pytorch baseline: program order with ASAP steps and the caching allocator.
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  const SteppedOrder asap = AsapSteps(graph, BuildDependencies(graph), graph.program_order);
  EXPECT_EQ(multi.baselines[0].summary.theoretical_peak,
            TheoreticalPeak(graph, model, asap.order, asap.steps));
  // Serializing never raises the peak: the single-stream plan is at or below the multi one.
  params.streams = Streams::kSingle;
  const OptimizeResult single = Optimize(graph, params);
  EXPECT_TRUE(single.plan.steps.empty());
  EXPECT_LE(single.plan.summary.theoretical_peak, multi.plan.summary.theoretical_peak);
  EXPECT_EQ(single.lower_bound, multi.lower_bound);
  // MODeL-MS on the same graph.
  params.streams = Streams::kMulti;
  params.mode = OptimizeMode::kModel;
  params.time_limit = 20;
  const OptimizeResult model_ms = Optimize(graph, params);
  ExpectMultiStream(graph, params, model_ms);
}

using MultiStreamCli = testing::TempDirTest;

TEST_F(MultiStreamCli, OptimizeWritesAPlanWithStepsThatValidates) {
  const std::string graph = Path("g.json"), plan = Path("p.json");
  auto g = testing::RunRoam(
      {"export-graph", kConfigs + "/alexnet.yaml", "--set", "model.image_size=64", "-o", graph});
  ASSERT_EQ(g.exit_code, 0) << g.err;
  auto r = testing::RunRoam({"optimize", graph, "--streams", "multi", "--max-concurrency", "2",
                             "--time-limit", "20", "--json", "-o", plan});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["streams"], "multi");
  EXPECT_LE(doc["total_peak"].get<Bytes>(), doc["baselines"][0]["total_peak"].get<Bytes>());
  auto written = nlohmann::json::parse(ReadFile(plan));
  ASSERT_TRUE(written.contains("steps"));
  EXPECT_EQ(written["steps"].size(), written["order"].size());
  auto v = testing::RunRoam({"validate", graph, plan});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("multi-stream"), std::string::npos) << v.out;
  EXPECT_NE(v.out.find("at most 2 ops in one"), std::string::npos) << v.out;

  // Single stream (the default) writes no steps and says nothing of streams.
  auto s = testing::RunRoam({"optimize", graph, "--time-limit", "20", "--json", "-o", plan});
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_FALSE(nlohmann::json::parse(s.out).contains("streams"));
  EXPECT_FALSE(nlohmann::json::parse(ReadFile(plan)).contains("steps"));
  // The config's planner.streams sets it; a bad value is named.
  auto c = testing::RunRoam(
      {"optimize", graph, "--set", "planner.streams=multi", "--time-limit", "20", "--json"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(nlohmann::json::parse(c.out)["streams"], "multi");
  auto bad = testing::RunRoam({"optimize", graph, "--streams", "many"});
  EXPECT_NE(bad.exit_code, 0);
  auto lone = testing::RunRoam({"optimize", graph, "--max-concurrency", "2", "-o", Path("x.json")});
  EXPECT_EQ(lone.exit_code, 2);
  EXPECT_NE(lone.err.find("needs --streams multi"), std::string::npos) << lone.err;
  EXPECT_FALSE(std::filesystem::exists(Path("x.json")));
  auto bad_config = testing::RunRoam({"optimize", graph, "--set", "planner.streams=many"});
  EXPECT_EQ(bad_config.exit_code, 2);
  EXPECT_NE(bad_config.err.find("planner.streams"), std::string::npos) << bad_config.err;
  EXPECT_NE(bad_config.err.find("must be single or multi"), std::string::npos) << bad_config.err;
}

TEST_F(MultiStreamCli, ModelModeIsModelMs) {
  auto r = testing::RunRoam({"optimize", kConfigs + "/alexnet.yaml", "--set", "model.image_size=64",
                             "--mode", "model", "--streams", "multi", "--time-limit", "10",
                             "--json", "-o", Path("p.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["mode"], "model");
  EXPECT_EQ(doc["streams"], "multi");
  EXPECT_LE(doc["lower_bound"].get<Bytes>(), doc["theoretical_peak"].get<Bytes>());
  auto plan = nlohmann::json::parse(ReadFile(Path("p.json")));
  ASSERT_TRUE(plan.contains("steps"));
  // The warm start meets the bound here, so MODeL-MS keeps it, and it is packed.
  EXPECT_EQ(doc["order"], "optimal");
  EXPECT_LT(plan["steps"].back().get<int>() + 1, static_cast<int>(plan["steps"].size()));
}

// Validator rejections through the CLI: dependent ops in one step, a step out of order.
TEST_F(MultiStreamCli, ValidateRejectsDependentOpsInOneStepAndAStepOutOfOrder) {
  const std::string graph = testing::SourceDir() + "/tests/data/diamond.graph.json";
  const std::string golden = testing::SourceDir() + "/tests/data/diamond.multi.plan.json";
  auto ok = testing::RunRoam({"validate", graph, golden});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  auto plan = nlohmann::json::parse(ReadFile(golden));
  plan["steps"] = {0, 0, 0, 1};  // b depends on a
  auto dep = testing::RunRoam({"validate", graph, Write("dep.json", plan.dump())});
  EXPECT_EQ(dep.exit_code, 1);
  EXPECT_NE(dep.out.find("must be independent"), std::string::npos) << dep.out;
  plan["steps"] = {0, 1, 0, 2};
  auto back = testing::RunRoam({"validate", graph, Write("back.json", plan.dump())});
  EXPECT_EQ(back.exit_code, 1);
  EXPECT_NE(back.out.find("never decrease"), std::string::npos) << back.out;
  plan["steps"] = {0, 0, 1};
  auto count = testing::RunRoam({"validate", graph, Write("count.json", plan.dump())});
  EXPECT_EQ(count.exit_code, 2);
  EXPECT_NE(count.err.find("count.json: field \"steps\""), std::string::npos) << count.err;
}

}  // namespace
}  // namespace roam
