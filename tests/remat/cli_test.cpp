// `roam remat`, `roam import-nodelink` and `roam validate` of rewritten graphs, end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/io.h"
#include "tests/support/run_command.h"
#include "tests/support/training_graph.h"
#include "tests/support/xml.h"

namespace roam {
namespace {

using testing::RunRoam;

class RematCli : public testing::TempDirTest {
 protected:
  std::string TrainingGraph(int layers, unsigned seed) {
    std::mt19937_64 rng(seed);
    Graph graph = testing::TrainingLikeGraph(rng, {.layers = layers});
    std::string path = Path("graph.json");
    WriteFileAtomically(path, GraphToJson(graph));
    return path;
  }
};

TEST_F(RematCli, JsonReportsTheBudgetPeakOverheadStatusAndWritesAValidFaithfulPlan) {
  const std::string graph = TrainingGraph(6, 3);
  auto r = RunRoam({"remat", graph, "--budget-ratio", "0.8", "--alignment", "1", "--json", "-o",
                    Path("plan.json"), "--graph-out", Path("rw.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto doc = nlohmann::json::parse(r.out);
  for (const char* key : {"budget", "peak", "compute_overhead", "status", "seconds"})
    EXPECT_TRUE(doc.contains(key)) << key;
  EXPECT_LE(doc["peak"].get<Bytes>(), doc["budget"].get<Bytes>());
  EXPECT_GE(doc["compute_overhead"].get<double>(), 0.0);
  auto v = RunRoam({"validate", Path("rw.json"), Path("plan.json"), "--original", graph});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

// A config's remat section sets the defaults of `roam remat`; a flag wins over it.
TEST_F(RematCli, TheConfigsRematSectionAppliesAndAFlagWins) {
  const std::vector<std::string> base = {
      "remat",          std::string(ROAM_CONFIGS_DIR) + "/resnet18.yaml",
      "--set",          "model.batch=8",
      "--set",          "model.image_size=64",
      "--set",          "training.optimizer=sgd",
      "--set",          "remat.method=checkpoint",
      "--budget-ratio", "0.8",
      "--json"};
  auto from_config = RunRoam(base);
  ASSERT_EQ(from_config.exit_code, 0) << from_config.err << from_config.out;
  EXPECT_EQ(nlohmann::json::parse(from_config.out)["method"], "checkpoint");
  std::vector<std::string> with_flag = base;
  with_flag.insert(with_flag.end(), {"--method", "greedy"});
  auto from_flag = RunRoam(with_flag);
  ASSERT_EQ(from_flag.exit_code, 0) << from_flag.err << from_flag.out;
  EXPECT_EQ(nlohmann::json::parse(from_flag.out)["method"], "greedy");
  std::vector<std::string> bad = base;
  bad.insert(bad.end(), {"--set", "remat.greedy.score=area"});
  auto rejected = RunRoam(bad);
  EXPECT_EQ(rejected.exit_code, 2);
  EXPECT_NE(rejected.err.find("remat.greedy.score"), std::string::npos) << rejected.err;
}

// A graph file has no config, but its planner and remat settings come from --set all the
// same; a model key names the graph file and the --set, and exits 2.
TEST_F(RematCli, AGraphFileTakesPlannerAndRematSetsButNoModelKeys) {
  const std::string graph = TrainingGraph(6, 3);
  const std::vector<std::string> base = {"remat",       graph, "--budget-ratio", "0.8",
                                         "--alignment", "1",   "--json"};
  std::vector<std::string> set = base;
  set.insert(set.end(), {"--set", "remat.method=checkpoint"});
  auto from_set = RunRoam(set);
  ASSERT_EQ(from_set.exit_code, 0) << from_set.err << from_set.out;
  EXPECT_EQ(nlohmann::json::parse(from_set.out)["method"], "checkpoint");
  std::vector<std::string> model = base;
  model.insert(model.end(), {"--set", "model.batch=4"});
  auto rejected = RunRoam(model);
  EXPECT_EQ(rejected.exit_code, 2);
  for (const std::string& part : {graph, std::string("--set model.batch=4"),
                                  std::string("only planner.* and remat.* keys apply")})
    EXPECT_NE(rejected.err.find(part), std::string::npos) << rejected.err;
}

// `--method blocks` is the greedy improved block by block over the subgraph tree: a valid,
// faithful plan within the budget, never dearer than the greedy's; a bad checkpoint cut rule is
// bad input.
TEST_F(RematCli, TheBlocksMethodIsNeverDearerThanTheGreedyAndABadCutRuleExitsTwo) {
  const std::string graph = TrainingGraph(6, 3);
  const std::vector<std::string> base = {"remat",       graph, "--budget-ratio", "0.7",
                                         "--alignment", "1",   "--json"};
  std::vector<std::string> greedy = base, blocks = base;
  greedy.insert(greedy.end(), {"--method", "greedy"});
  blocks.insert(blocks.end(),
                {"--method", "blocks", "-o", Path("plan.json"), "--graph-out", Path("rw.json")});
  auto g = RunRoam(greedy);
  auto b = RunRoam(blocks);
  ASSERT_EQ(g.exit_code, 0) << g.err << g.out;
  ASSERT_EQ(b.exit_code, 0) << b.err << b.out;
  auto gd = nlohmann::json::parse(g.out), bd = nlohmann::json::parse(b.out);
  EXPECT_LE(bd["compute_overhead"].get<double>(), gd["compute_overhead"].get<double>() + 1e-12);
  EXPECT_LE(bd["peak"].get<Bytes>(), bd["budget"].get<Bytes>());
  const std::string method = bd["method"].get<std::string>();
  EXPECT_TRUE(method == "blocks" || method == "greedy") << method;
  auto v = RunRoam({"validate", Path("rw.json"), Path("plan.json"), "--original", graph});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  auto bad = RunRoam({"remat", std::string(ROAM_CONFIGS_DIR) + "/resnet18.yaml", "--set",
                      "remat.checkpoint.cuts=diagonal", "--budget-ratio", "0.8"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("remat.checkpoint.cuts"), std::string::npos) << bad.err;
}

TEST_F(RematCli, ATamperedRewriteFailsValidation) {
  const std::string graph = TrainingGraph(6, 4);
  auto r = RunRoam({"remat", graph, "--budget-ratio", "0.9", "--alignment", "1", "-o",
                    Path("plan.json"), "--graph-out", Path("rw.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  auto doc = nlohmann::ordered_json::parse(ReadFile(Path("rw.json")));
  // Point the first copy at an op with another name.
  bool changed = false;
  for (auto& op : doc["ops"]) {
    if (!op.contains("recomputes")) continue;
    for (const auto& other : doc["ops"])
      if (other["name"] != op["name"] && !other.contains("recomputes")) {
        op["recomputes"] = other["id"];
        changed = true;
        break;
      }
    break;
  }
  ASSERT_TRUE(changed) << "the remat recomputed nothing";
  WriteFileAtomically(Path("bad.json"), doc.dump());
  auto v = RunRoam({"validate", Path("bad.json"), Path("plan.json")});
  EXPECT_EQ(v.exit_code, 1);
  EXPECT_NE(v.out.find("not a faithful remat"), std::string::npos) << v.out;
}

TEST_F(RematCli, AnInfeasibleBudgetSaysSoWritesNothingAndExitsOne) {
  const std::string graph = TrainingGraph(3, 5);
  auto r = RunRoam({"remat", graph, "--budget", "1", "--alignment", "1", "-o", Path("plan.json")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("out of reach"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("smallest peak found"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(Path("plan.json")));
}

// A budget proven out of reach has no compute lower bound: none is printed as one.
TEST_F(RematCli, ABudgetProvenOutOfReachReportsNoComputeBound) {
  const std::string graph = TrainingGraph(3, 5);
  auto r = RunRoam({"remat", graph, "--budget", "1", "--alignment", "1", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["status"], "infeasible-proven");
  EXPECT_TRUE(doc["compute_lower_bound"].is_null()) << doc["compute_lower_bound"];
}

// --fit says what the budget bounds, and the report says which was used; with theoretical the
// plan's theoretical peak is within the budget and its arena is reported beside it.
TEST_F(RematCli, FitSaysWhatTheBudgetBoundsAndTheReportSaysSo) {
  const std::string graph = TrainingGraph(6, 3);
  for (const char* by : {"arena", "theoretical"}) {
    SCOPED_TRACE(by);
    auto r = RunRoam({"remat", graph, "--budget-ratio", "0.7", "--alignment", "1", "--fit", by,
                      "--json", "-o", Path("plan.json")});
    ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
    auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["fit"], by);
    const Bytes measured = std::string(by) == "arena" ? doc["peak"].get<Bytes>()
                                                      : doc["theoretical_peak"].get<Bytes>();
    EXPECT_LE(measured, doc["budget"].get<Bytes>());
  }
  auto text = RunRoam(
      {"remat", graph, "--budget-ratio", "0.7", "--alignment", "1", "--fit", "theoretical"});
  EXPECT_NE(text.out.find("theoretical peak (MOCCASIN"), std::string::npos) << text.out;
  auto bad = RunRoam({"remat", graph, "--budget-ratio", "0.7", "--fit", "offsets"});
  EXPECT_EQ(bad.exit_code, 2);
}

// Where the graph draws random numbers, the report says which default roam took and why.
TEST_F(RematCli, TheReportSaysWhetherRandomOpsAreRecomputed) {
  std::mt19937_64 rng(4);
  Graph g = testing::TrainingLikeGraph(rng, {.layers = 4});
  g.ops[1].name = "aten.native_dropout";
  const std::string path = Path("dropout.json");
  WriteFileAtomically(path, GraphToJson(g));
  auto off = RunRoam({"remat", path, "--budget-ratio", "0.8", "--alignment", "1"});
  ASSERT_EQ(off.exit_code, 0) << off.err << off.out;
  EXPECT_NE(off.out.find("random ops never recomputed"), std::string::npos) << off.out;
  auto on =
      RunRoam({"remat", path, "--budget-ratio", "0.8", "--alignment", "1", "--rng-state-kept"});
  ASSERT_EQ(on.exit_code, 0) << on.err << on.out;
  EXPECT_NE(on.out.find("random ops recomputable"), std::string::npos) << on.out;
  auto plain = RunRoam({"remat", TrainingGraph(4, 4), "--budget-ratio", "0.8", "--alignment", "1"});
  EXPECT_EQ(plain.out.find("random ops"), std::string::npos) << plain.out;
}

TEST_F(RematCli, SweepPrintsTheTradeOffDownToTheSmallestFeasibleBudget) {
  const std::string graph = TrainingGraph(5, 6);
  auto r =
      RunRoam({"remat", graph, "--sweep", "--sweep-step", "0.1", "--alignment", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  ASSERT_GE(doc.size(), 2u);
  EXPECT_DOUBLE_EQ(doc[0]["ratio"].get<double>(), 1.0);
  // At 100% the theoretical peak fits; what the layout adds over it may cost a little compute.
  EXPECT_TRUE(doc[0]["feasible"].get<bool>());
  EXPECT_LE(doc[0]["peak"].get<Bytes>(), doc[0]["budget"].get<Bytes>());
  for (size_t i = 1; i < doc.size(); ++i) EXPECT_GE(doc[i]["compute_overhead"].get<double>(), 0.0);
  // Each point's plan is of its budget or of a lower one, which fits it too.
  for (const auto& p : doc) EXPECT_LE(p["plan_ratio"].get<double>(), p["ratio"].get<double>());
  EXPECT_FALSE(doc.back()["feasible"].get<bool>());
}

// One budget per ratio: --budget-ratio and the sweep's point at that ratio plan the same bytes
// (the sweep once reached 0.8 as 1 - 0.2 in steps, a byte below).
TEST_F(RematCli, BudgetRatioAndTheSweepPlanTheSameBudgetForARatio) {
  const std::string graph = TrainingGraph(5, 6);
  auto sweep =
      RunRoam({"remat", graph, "--sweep", "--sweep-step", "0.05", "--alignment", "1", "--json"});
  ASSERT_EQ(sweep.exit_code, 0) << sweep.err;
  auto points = nlohmann::json::parse(sweep.out);
  int compared = 0;
  for (const auto& p : points) {
    const double ratio = p["ratio"].get<double>();
    if (std::abs(ratio - 0.8) > 1e-9 && std::abs(ratio - 0.65) > 1e-9) continue;
    char text[16];
    std::snprintf(text, sizeof text, "%.2f", ratio);
    auto one = RunRoam({"remat", graph, "--budget-ratio", text, "--alignment", "1", "--json"});
    ASSERT_EQ(one.exit_code, 0) << one.err;
    auto r = nlohmann::json::parse(one.out.substr(0, one.out.find('\n')));
    EXPECT_EQ(r["budget"].get<Bytes>(), p["budget"].get<Bytes>()) << text;
    EXPECT_LE(static_cast<double>(r["budget"].get<Bytes>()),
              ratio * static_cast<double>(r["no_remat_peak"].get<Bytes>()) + 1e-6);
    ++compared;
  }
  EXPECT_EQ(compared, 2);
}

TEST_F(RematCli, ReportsTheComputeLowerBoundAndTheSweepPrintsItWhenAsked) {
  const std::string graph = TrainingGraph(5, 6);
  auto one = RunRoam({"remat", graph, "--budget-ratio", "0.6", "--alignment", "1", "--json"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  auto r = nlohmann::json::parse(one.out.substr(0, one.out.find('\n')));
  const double bound = r["compute_lower_bound"].get<double>(),
               overhead = r["compute_overhead"].get<double>();
  EXPECT_GT(bound, 0.0);
  EXPECT_LE(bound, overhead * (1 + 1e-6));
  if (r["status"] == "optimal") {
    EXPECT_NEAR(bound, overhead, 1e-5 * overhead);
  }

  auto plain =
      RunRoam({"remat", graph, "--sweep", "--sweep-step", "0.2", "--alignment", "1", "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  for (const auto& p : nlohmann::json::parse(plain.out))
    EXPECT_FALSE(p.contains("compute_lower_bound"));

  auto bounded = RunRoam({"remat", graph, "--sweep", "--sweep-step", "0.2", "--alignment", "1",
                          "--set", "remat.overhead_bound.in_sweep=true", "--json"});
  ASSERT_EQ(bounded.exit_code, 0) << bounded.err;
  int positive = 0;
  for (const auto& p : nlohmann::json::parse(bounded.out)) {
    ASSERT_TRUE(p.contains("compute_lower_bound"));
    if (!p["feasible"].get<bool>()) continue;
    EXPECT_LE(p["compute_lower_bound"].get<double>(),
              p["compute_overhead"].get<double>() * (1 + 1e-6));
    if (p["compute_lower_bound"].get<double>() > 0) ++positive;
  }
  EXPECT_GT(positive, 0);
  auto table = RunRoam({"remat", graph, "--sweep", "--sweep-step", "0.2", "--alignment", "1",
                        "--set", "remat.overhead_bound.in_sweep=true", "--svg", Path("b.svg")});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("bound"), std::string::npos) << table.out;
  const std::string svg = ReadFile(Path("b.svg"));
  EXPECT_EQ(testing::XmlProblem(svg), "");
  EXPECT_NE(svg.find("compute lower bound"), std::string::npos);
}

TEST_F(RematCli, SweepSvgIsWellFormedWithOnePointPerBudget) {
  const std::string graph = TrainingGraph(5, 6);
  auto r = RunRoam({"remat", graph, "--sweep", "--sweep-step", "0.1", "--alignment", "1", "--json",
                    "--svg", Path("curve.svg")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  const std::string svg = ReadFile(Path("curve.svg"));
  EXPECT_EQ(testing::XmlProblem(svg), "");
  // Per budget: its label on the x axis, a point of the peak reached and, where the budget
  // was met, a point of the added compute.
  size_t feasible = 0;
  for (const auto& p : doc) {
    if (p["feasible"].get<bool>()) ++feasible;
    char label[32];
    std::snprintf(label, sizeof label, ">%.0f%%</text>", 100 * p["ratio"].get<double>());
    EXPECT_NE(svg.find(label), std::string::npos) << label;
  }
  size_t circles = 0;  // data points: the legend's markers are <circle class="legend"
  for (size_t at = svg.find("<circle cx"); at != std::string::npos;
       at = svg.find("<circle cx", at + 1))
    ++circles;
  EXPECT_EQ(circles, doc.size() + feasible);
  // --svg belongs to --sweep.
  auto alone = RunRoam({"remat", graph, "--budget-ratio", "0.9", "--svg", Path("x.svg")});
  EXPECT_EQ(alone.exit_code, 2) << alone.err;
  EXPECT_FALSE(std::filesystem::exists(Path("x.svg")));
}

TEST_F(RematCli, BudgetFlagsAreExclusiveAndBadFilesExitTwo) {
  const std::string graph = TrainingGraph(3, 7);
  EXPECT_EQ(RunRoam({"remat", graph}).exit_code, 2);
  EXPECT_EQ(RunRoam({"remat", graph, "--budget", "10", "--budget-ratio", "0.5"}).exit_code, 2);
  Write("bad.json", "{\"nodes\": [{\"id\": 0}], \"links\": []}");
  auto r = RunRoam({"import-nodelink", Path("bad.json"), "-o", Path("out.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.json: nodes[0]: needs \"cost_ram\""), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(Path("out.json")));
}

TEST_F(RematCli, ImportedNodeLinkGraphsPlan) {
  Write(
      "g.json",
      R"({"nodes": [{"id": 0, "out_cost": 10, "duration": 1}, {"id": 1, "out_cost": 10, "duration": 1},
            {"id": 2, "out_cost": 10, "duration": 1}, {"id": 3, "out_cost": 10, "duration": 1},
            {"id": 4, "out_cost": 10, "duration": 1}],
            "links": [{"source": 0, "target": 1}, {"source": 1, "target": 2}, {"source": 2, "target": 3},
                      {"source": 3, "target": 4}, {"source": 0, "target": 3}, {"source": 1, "target": 4}]})");
  // Without remat node 3 runs with 0, 1, 2 and its output live (40); recomputing 1 after 3
  // fits 30.
  auto r = RunRoam({"import-nodelink", Path("g.json"), "-o", Path("g.graph.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = RunRoam({"remat", Path("g.graph.json"), "--budget", "30", "--alignment", "1", "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  auto doc = nlohmann::json::parse(p.out);
  EXPECT_LE(doc["peak"].get<Bytes>(), 30);
  EXPECT_DOUBLE_EQ(doc["compute_overhead"].get<double>(), 1.0 / 5);
}

}  // namespace
}  // namespace roam
