// End-to-end tests of the roam command line: exit codes, messages, files written.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/io.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

using testing::DataPath;
using testing::RunRoam;
namespace fs = std::filesystem;

using Cli = testing::TempDirTest;

TEST_F(Cli, HelpListsEveryCommandAndExitsZero) {
  auto r = RunRoam({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* cmd : {"evaluate", "validate"})
    EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd << " missing from\n" << r.out;
  auto sub = RunRoam({"evaluate", "--help"});
  EXPECT_EQ(sub.exit_code, 0);
  for (const char* opt : {"--order", "--layout", "--alignment", "--json", "-o"})
    EXPECT_NE(sub.out.find(opt), std::string::npos) << opt;
}

TEST_F(Cli, EvaluateWritesAPlanThatValidates) {
  std::string plan = Path("plan.json");
  auto r = RunRoam({"evaluate", DataPath("tiny.graph.json"), "-o", plan});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("theoretical peak"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3.00 KiB (3072 B)"), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(plan));
  auto v = RunRoam({"validate", DataPath("tiny.graph.json"), plan});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_NE(v.out.find("valid"), std::string::npos);
}

TEST_F(Cli, EvaluateJsonPrintsOneObjectWithTheSummaryKeys) {
  auto r = RunRoam({"evaluate", DataPath("tiny.graph.json"), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  for (const char* key : {"ops", "storages", "persistent_bytes", "theoretical_peak", "actual_peak",
                          "fragmentation", "total_peak", "seconds"})
    EXPECT_TRUE(doc.contains(key)) << key;
  EXPECT_EQ(doc["theoretical_peak"], 3072);
  EXPECT_EQ(doc["persistent_bytes"], 3072);
}

TEST_F(Cli, AlignmentOptionChangesTheRounding) {
  auto r = RunRoam({"evaluate", DataPath("tiny.graph.json"), "--alignment", "1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["theoretical_peak"], 2504);
}

// A config's planner section is the default of every planner flag; a flag given on the command
// line wins over it, and a graph file takes the built-in defaults.
TEST_F(Cli, AConfigsPlannerSettingsApplyUnlessAFlagOverridesThem) {
  const std::string config = testing::SourceDir() + "/tests/gen/data/gpt2-tiny.yaml";
  auto peak = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"evaluate", config});
    args.push_back("--json");
    auto r = RunRoam(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)["theoretical_peak"].get<long long>()
                            : -1;
  };
  const long long default_peak = peak({});
  const long long unaligned_peak = peak({"--set", "planner.alignment=1"});
  EXPECT_LT(unaligned_peak, default_peak);
  EXPECT_EQ(peak({"--set", "planner.alignment=1", "--alignment", "512"}), default_peak);
  EXPECT_EQ(peak({"--set", "planner.alignment=4096", "--alignment", "1"}), unaligned_peak);

  auto node_limit = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"partition", config, "--json"});
    auto r = RunRoam(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? nlohmann::json::parse(r.out)["node_limit"].get<int>() : -1;
  };
  EXPECT_EQ(node_limit({}), 40);
  EXPECT_EQ(node_limit({"--set", "planner.partition.node_limit=7"}), 7);
  EXPECT_EQ(node_limit({"--set", "planner.partition.node_limit=7", "--node-limit", "9"}), 9);
}

TEST_F(Cli, ValidateReportsTheFirstViolationWithExitOne) {
  auto plan = nlohmann::json::parse(ReadFile(DataPath("tiny.plan.json")));
  plan["buffers"][2]["offset"] = 1024;  // overlaps the activation at step 3
  std::string path = Write("bad.plan.json", plan.dump());
  auto r = RunRoam({"validate", DataPath("tiny.graph.json"), path});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("overlap"), std::string::npos) << r.out;
}

TEST_F(Cli, ValidateRejectsAnOrderThatIsNotAPermutation) {
  auto plan = nlohmann::json::parse(ReadFile(DataPath("tiny.plan.json")));
  plan["order"] = {10, 11, 12, 13, 13};
  auto r = RunRoam({"validate", DataPath("tiny.graph.json"), Write("p.json", plan.dump())});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("twice"), std::string::npos) << r.out;
}

TEST_F(Cli, BadGraphExitsTwoNamingTheFileAndWritesNothing) {
  std::string graph = Write("broken.json",
                            R"({"format":"roam-graph-v1","ops":[{"id":1}],
                               "tensors":[{"id":3,"size":-8,"producer":1}]})");
  std::string plan = Path("plan.json");
  auto r = RunRoam({"evaluate", graph, "-o", plan});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("tensors[0]"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(plan));
}

TEST_F(Cli, MissingInputFileExitsTwo) {
  auto r = RunRoam({"evaluate", Path("nope.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope.json"), std::string::npos) << r.err;
}

TEST_F(Cli, UnwritableOutputExitsTwoAndLeavesNoFile) {
  std::string plan = Path("no/such/dir/plan.json");
  auto r = RunRoam({"evaluate", DataPath("tiny.graph.json"), "-o", plan});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("plan.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(plan));
}

TEST_F(Cli, UsageErrorsExitTwo) {
  EXPECT_EQ(RunRoam({}).exit_code, 2);
  EXPECT_EQ(RunRoam({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(RunRoam({"evaluate", DataPath("tiny.graph.json"), "--order", "random"}).exit_code, 2);
  EXPECT_EQ(RunRoam({"evaluate", DataPath("tiny.graph.json"), "--alignment", "0"}).exit_code, 2);
  EXPECT_EQ(RunRoam({"validate", DataPath("tiny.graph.json")}).exit_code, 2);
}

}  // namespace
}  // namespace roam
