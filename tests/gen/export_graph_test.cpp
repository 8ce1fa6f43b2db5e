// End to end through the roam binary: export-graph, YAML configs as inputs, bad configs.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "core/io.h"
#include "tests/support/run_command.h"

namespace roam {
namespace {

using testing::RunRoam;
namespace fs = std::filesystem;

using GenCli = testing::TempDirTest;

const std::string kConfigs = ROAM_CONFIGS_DIR;

TEST_F(GenCli, ExportGraphWritesAGraphThatLoadsAndEvaluates) {
  const std::string out = Path("resnet18.json");
  auto r =
      RunRoam({"export-graph", kConfigs + "/resnet18.yaml", "-o", out, "--set", "model.batch=2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("750 ops"), std::string::npos) << r.out;
  Graph g = LoadGraph(out);
  EXPECT_EQ(g.name, "resnet18");
  auto e = RunRoam({"evaluate", out, "--json"});
  EXPECT_EQ(e.exit_code, 0) << e.err;
}

TEST_F(GenCli, EvaluateAcceptsAConfigWithOverridesDirectly) {
  auto small = RunRoam({"evaluate", kConfigs + "/gpt2-small.yaml", "--set", "model.n_layer=2",
                        "--set", "model.seq_len=128", "--json"});
  ASSERT_EQ(small.exit_code, 0) << small.err;
  EXPECT_NE(small.out.find("\"graph\":\"gpt2-small\""), std::string::npos) << small.out;
  auto bigger = RunRoam({"evaluate", kConfigs + "/gpt2-small.yaml", "--set", "model.n_layer=2",
                         "--set", "model.seq_len=128", "--set", "model.batch=4", "--json"});
  ASSERT_EQ(bigger.exit_code, 0) << bigger.err;
  EXPECT_NE(small.out, bigger.out);
}

struct BadConfig {
  const char* what;
  const char* yaml;
  std::vector<const char*> set;
  std::vector<const char*> mentions;
};

void PrintTo(const BadConfig& bad, std::ostream* os) { *os << bad.what; }

class GenCliRejects : public GenCli, public ::testing::WithParamInterface<BadConfig> {};

TEST_P(GenCliRejects, WithExitTwoAMessageAndNoOutputFile) {
  const BadConfig& bad = GetParam();
  const std::string config = Write("bad.yaml", bad.yaml);
  const std::string out = Path("graph.json");
  for (const char* command : {"export-graph", "evaluate"}) {
    std::vector<std::string> args = {command, config};
    if (std::string(command) == "export-graph") args.insert(args.end(), {"-o", out});
    for (const char* s : bad.set) args.insert(args.end(), {"--set", s});
    auto r = RunRoam(args);
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    for (const char* m : bad.mentions)
      EXPECT_NE(r.err.find(m), std::string::npos) << m << " not in " << r.err;
    EXPECT_FALSE(fs::exists(out));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GenCliRejects,
    ::testing::Values(
        BadConfig{"unknown key",
                  "model:\n  family: gpt2\n  n_embed: 64\n",
                  {},
                  {"bad.yaml", "model.n_embed", "did you mean model.n_embd?"}},
        BadConfig{"unknown key from --set",
                  "model: {family: gpt2}\n",
                  {"model.layers=2"},
                  {"model.layers", "--set model.layers=2", "did you mean"}},
        BadConfig{"unknown family", "model: {family: lstm}\n", {}, {"model.family", "lstm"}},
        BadConfig{"unknown optimizer",
                  "model: {family: gpt2}\ntraining: {optimizer: rmsprop}\n",
                  {},
                  {"training.optimizer", "rmsprop"}},
        BadConfig{"non-positive dimension",
                  "model: {family: gpt2, n_layer: 0}\n",
                  {},
                  {"model.n_layer", "positive"}},
        BadConfig{"heads do not divide the width",
                  "model: {family: gpt2, n_embd: 100, n_head: 3}\n",
                  {},
                  {"model.n_embd", "not divisible by model.n_head"}},
        BadConfig{"YAML syntax error",
                  "model:\n  family: gpt2\n  batch: [1\n",
                  {},
                  {"bad.yaml", "YAML syntax error at line", "column"}}),
    [](const auto& param_info) {
      std::string name = param_info.param.what;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      return name;
    });

TEST_F(GenCli, MissingConfigFileIsBadInput) {
  auto r = RunRoam({"export-graph", Path("nope.yaml"), "-o", Path("g.json")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nope.yaml"), std::string::npos) << r.err;
}

TEST_F(GenCli, SetOnAJsonGraphIsRejected) {
  ASSERT_EQ(RunRoam({"export-graph", kConfigs + "/alexnet.yaml", "-o", Path("a.json")}).exit_code,
            0);
  auto r = RunRoam({"evaluate", Path("a.json"), "--set", "model.batch=2"});
  EXPECT_EQ(r.exit_code, 2);
}

}  // namespace
}  // namespace roam
