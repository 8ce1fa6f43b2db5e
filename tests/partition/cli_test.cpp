// `roam partition` end to end: the binary's JSON describes a valid partition of the file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "core/io.h"
#include "tests/support/training_graph.h"

namespace roam {
namespace {

struct Result {
  int status = -1;
  std::string out;
};

Result RunRoam(const std::string& args) {
  Result r;
  std::string command = std::string(ROAM_BINARY) + " " + args + " 2>/dev/null";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return r;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) r.out.append(buffer, n);
  int status = pclose(pipe);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(PartitionCli, JsonLeavesConcatenateToATopologicalOrderOfTheFile) {
  std::mt19937_64 rng(51);
  Graph graph = testing::TrainingLikeGraph(rng, {.layers = 5});
  std::string path =
      (std::filesystem::temp_directory_path() / "roam_partition_cli_test.graph.json").string();
  WriteFileAtomically(path, GraphToJson(graph));
  Result r = RunRoam("partition " + path + " --node-limit 12 --json");
  std::filesystem::remove(path);
  ASSERT_EQ(r.status, 0) << r.out;
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
  std::string path =
      (std::filesystem::temp_directory_path() / "roam_partition_cli_text.graph.json").string();
  WriteFileAtomically(path, GraphToJson(graph));
  Result r = RunRoam("partition " + path + " --node-limit 10");
  std::filesystem::remove(path);
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("root #0"), std::string::npos);
  EXPECT_NE(r.out.find("independent #1"), std::string::npos);
  EXPECT_EQ(RunRoam("partition /nonexistent/graph.json").status, 2);
  EXPECT_EQ(RunRoam("partition " + path + " --node-limit 0").status, 2);
}

}  // namespace
}  // namespace roam
