// End to end: `roam config` prints the resolved tree, and what it prints reads back.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "config/config.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam::config {
namespace {

using roam::testing::RunRoam;
using roam::testing::SourceDir;

TEST(ConfigCli, DefaultsPrintEveryFieldAndReadBackAsAConfig) {
  const auto r = RunRoam({"config", "--defaults"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto* fields : {&PlannerFields(), &RematFields()})
    for (const Field& f : *fields) {
      const std::string leaf = f.key.substr(f.key.rfind('.') + 1);
      EXPECT_NE(r.out.find(" " + leaf + ": "), std::string::npos) << f.key;
    }
  // The printed tree is a valid config: with a model section it parses to the defaults.
  const Config c = ParseConfig(r.out + "model: {family: gpt2}\n", "defaults.yaml");
  const Config d = ParseConfig("model: {family: gpt2}", "d.yaml");
  for (const auto* fields : {&PlannerFields(), &RematFields()})
    for (const Field& f : *fields) {
      Planning a{c.planner, c.remat}, b{d.planner, d.remat};
      EXPECT_EQ(f.print(a), f.print(b)) << f.key;
    }
}

TEST(ConfigCli, AFileResolvesWithOverridesAndItsModelAsJson) {
  const std::string file = SourceDir() + "/configs/gpt2-small.yaml";
  const auto yaml = RunRoam({"config", file, "--set", "planner.partition.node_limit=7"});
  ASSERT_EQ(yaml.exit_code, 0) << yaml.err;
  EXPECT_NE(yaml.out.find("    node_limit: 7  #"), std::string::npos) << yaml.out;
  EXPECT_NE(yaml.out.find("  n_layer: 12\n"), std::string::npos) << yaml.out;
  const auto json = RunRoam({"config", file, "--json", "--set", "model.batch=3"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["model"]["family"], "gpt2");
  EXPECT_EQ(j["model"]["batch"], 3);
  EXPECT_EQ(j["model"]["name"], "gpt2-small");
  EXPECT_EQ(j["training"]["optimizer"], "adam");
  EXPECT_FALSE(j["model"].contains("depth"));  // resnet's and vgg's key
}

TEST(ConfigCli, BadInputIsExitTwoNamingTheFileAndKey) {
  const std::string file = SourceDir() + "/configs/gpt2-small.yaml";
  const auto moved = RunRoam({"config", file, "--set", "planner.time_limit=5"});
  EXPECT_EQ(moved.exit_code, 2);
  EXPECT_NE(moved.err.find("gpt2-small.yaml: planner.time_limit"), std::string::npos) << moved.err;
  EXPECT_NE(moved.err.find("has moved to planner.time_limit_s"), std::string::npos) << moved.err;
  EXPECT_EQ(RunRoam({"config"}).exit_code, 2);
  EXPECT_EQ(RunRoam({"config", "--defaults", file}).exit_code, 2);
}

}  // namespace
}  // namespace roam::config
