// End-to-end: `roam layout` and `roam optimize --mode model` run as the real binary.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "core/io.h"
#include "tests/support/random_graph.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

using testing::DataPath;
using testing::RunRoam;
namespace fs = std::filesystem;

using IlpCli = testing::TempDirTest;

TEST_F(IlpCli, LayoutWritesTheGoldenSolutionAndSaysItIsMinimal) {
  std::string out = Path("solution.csv");
  auto r = RunRoam({"layout", DataPath("ilp/layout_small.csv"), "-o", out, "--time-limit", "10"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("minimal           yes, proven"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(out), ReadFile(DataPath("ilp/layout_small.solution.csv")));
}

TEST_F(IlpCli, LayoutJsonReportsHeightBoundAndCapacityFit) {
  auto r = RunRoam({"layout", DataPath("ilp/layout_small.csv"), "--json", "--capacity", "1000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["buffers"], 7);
  EXPECT_TRUE(doc["fits"].get<bool>());
  EXPECT_LE(doc["height"].get<long>(), 1000);
  EXPECT_GE(doc["height"].get<long>(), doc["lower_bound"].get<long>());
}

TEST_F(IlpCli, LayoutBeyondTheCapacityExitsOneAndWritesNothing) {
  std::string out = Path("solution.csv");
  auto r = RunRoam({"layout", DataPath("ilp/layout_small.csv"), "--capacity", "10", "-o", out});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("capacity of 10 B"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(IlpCli, BadLayoutCsvExitsTwoNamingFileLineAndColumn) {
  std::string bad = Write("bad.csv", "id,lower,upper,size\nx,0,5,8\ny,3,1,8\n");
  std::string out = Path("solution.csv");
  auto r = RunRoam({"layout", bad, "-o", out});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bad.csv:3: column 'upper'"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(IlpCli, OptimizeModelWritesAValidPlanAndSaysWhatIsOptimal) {
  std::mt19937_64 rng(8);
  testing::RandomGraphOptions options;
  options.ops = 12;
  Graph graph = testing::RandomGraph(rng, options);
  std::string input = Write("g.json", GraphToJson(graph));
  std::string plan = Path("plan.json");
  auto r = RunRoam({"optimize", input, "--mode", "model", "--time-limit", "20", "-o", plan,
                    "--json", "--alignment", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["mode"], "model");
  EXPECT_EQ(doc["order"], "optimal") << r.out;
  EXPECT_EQ(doc["layout"], "optimal") << r.out;
  MemoryModel model = BuildMemoryModel(graph, 1);
  EXPECT_EQ(doc["theoretical_peak"].get<Bytes>(), testing::BruteForceMinPeak(graph, model));
  EXPECT_LE(doc["pipeline"]["theoretical_peak"].get<Bytes>(),
            doc["baselines"][1]["theoretical_peak"].get<Bytes>());
  auto v = RunRoam({"validate", input, plan});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;

  auto text = RunRoam({"optimize", input, "--mode", "model", "--time-limit", "20"});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("order             optimal"), std::string::npos) << text.out;
}

TEST_F(IlpCli, OptimizeWithAlmostNoTimeStillReturnsAValidPlan) {
  std::string plan = Path("plan.json");
  auto r = RunRoam({"optimize", DataPath("tiny.graph.json"), "--mode", "model", "--time-limit",
                    "0.001", "-o", plan});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto v = RunRoam({"validate", DataPath("tiny.graph.json"), plan});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

TEST_F(IlpCli, OptimizeRejectsAnUnknownMode) {
  auto r = RunRoam({"optimize", DataPath("tiny.graph.json"), "--mode", "gurobi"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gurobi"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace roam
