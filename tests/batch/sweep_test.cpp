#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "batch/batch.h"
#include "config/config.h"
#include "core/error.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam::batch {
namespace {

using roam::testing::TempDirTest;

class SweepTest : public TempDirTest {
 protected:
  std::string SweepFile(const std::string& body) {
    Write("a.yaml", "model: {family: alexnet}\n");
    Write("b.graph.json", "{}");
    return Write("sweep.yaml", body);
  }
};

TEST_F(SweepTest, ExpandsInputsTimesGridLastAxisFastest) {
  batch::Sweep s = LoadSweep(
      SweepFile("name: smoke\ninputs: [a.yaml, b.graph.json]\nset: [planner.time_limit=5]\n"
                "grid:\n  model.batch: [1, 32]\n  mode: [heuristic, model]\nrepeats: 3\n"));
  EXPECT_EQ(s.name, "smoke");
  EXPECT_EQ(s.repeats, 3);
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0], Path("a.yaml"));
  EXPECT_EQ(s.input_names[0], "a.yaml");
  std::vector<RunSpec> runs = ExpandSweep(s);
  ASSERT_EQ(runs.size(), 8u);
  EXPECT_EQ(runs[0].overrides, (std::vector<std::string>{"planner.time_limit=5", "model.batch=1"}));
  EXPECT_EQ(runs[0].mode, Mode::kHeuristic);
  EXPECT_EQ(runs[1].mode, Mode::kModel);
  EXPECT_EQ(runs[2].overrides.back(), "model.batch=32");
  EXPECT_EQ(runs[4].input, Path("b.graph.json"));
  EXPECT_EQ(runs[3].repeats, 3);
  EXPECT_EQ(runs[3].params, (std::vector<std::pair<std::string, std::string>>{{"model.batch", "32"},
                                                                              {"mode", "model"}}));
  // Keys name the input as the sweep does, so they are the same in any checkout.
  EXPECT_EQ(runs[0].key, "a.yaml --set planner.time_limit=5 --set model.batch=1 --mode heuristic");
  std::set<std::string> keys, names;
  for (const RunSpec& r : runs) keys.insert(r.key), names.insert(r.name);
  EXPECT_EQ(keys.size(), runs.size());
  EXPECT_EQ(names.size(), runs.size());
}

TEST_F(SweepTest, ThreadsAxisIsThePlannerThreadsKey) {
  std::vector<RunSpec> runs =
      ExpandSweep(LoadSweep(SweepFile("inputs: a.yaml\ngrid: {threads: [1, 2]}\n")));
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].overrides, (std::vector<std::string>{"planner.threads=2"}));
  EXPECT_EQ(runs[1].mode, Mode::kRoam);  // no mode axis: ROAM
}

TEST_F(SweepTest, NoGridIsOneRunPerInput) {
  EXPECT_EQ(ExpandSweep(LoadSweep(SweepFile("inputs: [a.yaml, b.graph.json]\n"))).size(), 2u);
}

TEST_F(SweepTest, ErrorsNameTheFileAndTheField) {
  auto error = [&](const std::string& body) {
    try {
      LoadSweep(SweepFile(body));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("inputs: a.yaml\nrepeat: 2\n").find("sweep.yaml: repeat: unknown key"),
            std::string::npos);
  EXPECT_NE(error("grid: {mode: [model]}\n").find("inputs: missing"), std::string::npos);
  EXPECT_NE(error("inputs: [missing.yaml]\n").find("inputs: no such file: missing.yaml"),
            std::string::npos);
  EXPECT_NE(error("inputs: a.yaml\ngrid: {mode: [fast]}\n").find("grid.mode: unknown mode fast"),
            std::string::npos);
  EXPECT_NE(error("inputs: a.yaml\ngrid: {batch: [1]}\n").find("grid.batch: expected"),
            std::string::npos);
  EXPECT_NE(error("inputs: a.yaml\nrepeats: 0\n").find("repeats: expected a positive"),
            std::string::npos);
  EXPECT_NE(error("inputs: a.yaml\ngrid: {model.batch: []}\n").find("must not be empty"),
            std::string::npos);
  EXPECT_NE(error("inputs: [a.yaml\n").find("YAML syntax error"), std::string::npos);
}

// Every sweep shipped in perf/sweeps/ parses, names inputs that exist and expands to runs
// whose configs (with the sweep's overrides) load: a stale key fails here, not hours into a run.
TEST(ShippedSweeps, EveryOneLoadsAndEveryRunsConfigIsValid) {
  const std::filesystem::path dir = std::filesystem::path(ROAM_CONFIGS_DIR) / "../perf/sweeps";
  int sweeps = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".yaml") continue;
    ++sweeps;
    const Sweep sweep = LoadSweep(entry.path().string());
    const std::vector<RunSpec> runs = ExpandSweep(sweep);
    EXPECT_FALSE(runs.empty()) << entry.path();
    for (const RunSpec& run : runs) {
      ASSERT_TRUE(std::filesystem::exists(run.input)) << entry.path() << ": " << run.input;
      if (run.input.ends_with(".yaml")) {
        EXPECT_NO_THROW(config::LoadConfig(run.input, run.overrides))
            << entry.path() << ": " << run.key;
      }
    }
  }
  EXPECT_GE(sweeps, 5);
}

TEST(ShardTest, ParsesIOfN) {
  Shard s = ParseShard("2/5");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 5);
  EXPECT_EQ(ToString(s), "2/5");
  for (const char* bad : {"5/5", "-1/3", "1/0", "1", "a/b", "1/2x", "/2", ""})
    EXPECT_THROW(ParseShard(bad), InputError) << bad;
}

TEST(ShardTest, HashIsFnv1a64) {
  // Reference values of 64-bit FNV-1a: the hash must not change between builds or machines.
  EXPECT_EQ(StableHash(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(StableHash("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(StableHash("foobar"), 0x85944171f73967e8ULL);
}

TEST(ShardTest, EveryKeyFallsInExactlyOneShardAndShardsAreBalanced) {
  std::vector<std::string> keys;
  for (int i = 0; i < 3000; ++i)
    keys.push_back("configs/m" + std::to_string(i) + ".yaml --mode model");
  for (int n : {1, 2, 3, 7}) {
    std::vector<int> sizes(static_cast<size_t>(n), 0);
    for (const std::string& k : keys) {
      int in = 0;
      for (int i = 0; i < n; ++i)
        if (InShard(k, {i, n})) ++in, ++sizes[static_cast<size_t>(i)];
      EXPECT_EQ(in, 1) << k;
    }
    for (int size : sizes) EXPECT_GT(size, 3000 / n * 8 / 10) << n;
  }
}

}  // namespace
}  // namespace roam::batch
