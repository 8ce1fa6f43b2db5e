// `roam partition` end to end: the binary's JSON describes a valid partition of the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/io.h"
#include "tests/support/run_command.h"
#include "tests/support/training_graph.h"

namespace roam {
namespace {

TEST(PartitionCli, JsonLeavesConcatenateToATopologicalOrderOfTheFile) {
  std::mt19937_64 rng(51);
  Graph graph = testing::TrainingLikeGraph(rng, {.layers = 5});
  const std::string dir = testing::MakeTempDir("roam_partition_cli");
  const std::string path = dir + "/graph.json";
  WriteFileAtomically(path, GraphToJson(graph));
  testing::CommandResult r = testing::RunRoam({"partition", path, "--node-limit", "12", "--json"});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto doc = nlohmann::json::parse(r.out);
  std::map<ExternalId, OpId> by_ext;
  for (OpId op = 0; op < graph.num_ops(); ++op)
    by_ext[graph.ops[static_cast<size_t>(op)].ext_id] = op;
  std::vector<OpId> order;
  for (const auto& leaf : doc["leaves"]) {
    EXPECT_LE(leaf["ops"].size(), 12u);
    for (const auto& id : leaf["ops"]) order.push_back(by_ext.at(id.get<ExternalId>()));
  }
  EXPECT_EQ(CheckTopological(graph, BuildDependencies(graph), order), "");
  EXPECT_EQ(doc["tree"][0]["type"], "root");
  EXPECT_EQ(doc["tree"][0]["num_ops"], graph.num_ops());
}

TEST(PartitionCli, TextModeNamesEveryNodeAndAMissingFileExitsWithTwo) {
  std::mt19937_64 rng(52);
  Graph graph = testing::TrainingLikeGraph(rng, {.layers = 3});
  const std::string dir = testing::MakeTempDir("roam_partition_cli");
  const std::string path = dir + "/graph.json";
  WriteFileAtomically(path, GraphToJson(graph));
  testing::CommandResult r = testing::RunRoam({"partition", path, "--node-limit", "10"});
  std::filesystem::remove_all(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("root #0"), std::string::npos);
  EXPECT_NE(r.out.find("independent #1"), std::string::npos);
  testing::CommandResult missing = testing::RunRoam({"partition", "/nonexistent/graph.json"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("/nonexistent/graph.json"), std::string::npos);
  EXPECT_EQ(testing::RunRoam({"partition", path, "--node-limit", "0"}).exit_code, 2);
}

}  // namespace
}  // namespace roam
