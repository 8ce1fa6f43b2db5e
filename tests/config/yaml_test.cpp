#include "config/yaml.h"

#include <gtest/gtest.h>

namespace roam::config {
namespace {

TEST(ClosestKey, PrefersTheSmallestEditDistanceAndGivesUpWhenFar) {
  EXPECT_EQ(ClosestKey("n_embed", {"n_embd", "n_head", "n_layer"}), "n_embd");
  EXPECT_EQ(ClosestKey("zzzzzzzzzz", {"n_embd", "n_head"}), "");
}

TEST(ApplyOverrides, SetsDottedKeysCreatingSectionsAndNamesEachOverride) {
  YAML::Node root = YAML::Load("model: {batch: 1}\n");
  const auto overridden = ApplyOverrides(root, {"model.batch=4", "planner.partition.alpha=2"});
  EXPECT_EQ(root["model"]["batch"].as<int>(), 4);
  EXPECT_EQ(root["planner"]["partition"]["alpha"].as<double>(), 2.0);
  ASSERT_EQ(overridden.size(), 2u);
  EXPECT_EQ(overridden.at("model.batch"), "model.batch=4");
}

TEST(ApplyOverrides, RejectsMalformedOverridesNamingThem) {
  for (const char* bad : {"model.batch", "=4", "model..batch=4", "model.=4", "model.batch.x=1"}) {
    YAML::Node root = YAML::Load("model: {batch: 1}\n");
    try {
      ApplyOverrides(root, {bad});
      ADD_FAILURE() << bad << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace roam::config
