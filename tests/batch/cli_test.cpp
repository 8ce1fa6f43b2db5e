// End to end: roam batch, bench, merge-results and plot as separate processes.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "batch/batch.h"
#include "core/io.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam::batch {
namespace {

using roam::testing::DataPath;
using roam::testing::RunCommand;
using roam::testing::RunRoam;

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

class BatchCliTest : public roam::testing::TempDirTest {
 protected:
  std::string Config() const { return std::string(ROAM_CONFIGS_DIR) + "/alexnet.yaml"; }
  // A sweep of four cheap runs: AlexNet at four batch sizes, heuristic mode.
  std::string SmokeSweep() const {
    return Write("smoke.yaml", "name: smoke\ninputs: [" + Config() +
                                   "]\ngrid:\n  model.batch: [1, 2, 3, 4]\n  mode: [heuristic]\n"
                                   "repeats: 2\n");
  }
};

TEST_F(BatchCliTest, ABrokenInputFailsAloneAndTheOthersFinish) {
  std::string broken = Write("broken.graph.json", "{\"format\": \"roam-graph-v1\", \"ops\": [");
  auto r = RunRoam({"batch", DataPath("tiny.graph.json"), broken, Config(), "--mode", "heuristic",
                    "-o", Path("out"), "--jobs", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("broken (" + broken + ") failed: " + broken), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("3 runs"), std::string::npos);
  EXPECT_NE(r.out.find("1 failed"), std::string::npos);
  // No progress bar: stderr is not a terminal.
  EXPECT_EQ(r.err.find("runs, "), std::string::npos);
  std::vector<std::string> csv = Lines(ReadFile(Path("out/summary.csv")));
  ASSERT_EQ(csv.size(), 4u);
  EXPECT_NE(csv[0].find("total_peak [B]"), std::string::npos);
  EXPECT_NE(csv[1].find(",ok,"), std::string::npos);
  EXPECT_NE(csv[2].find(",failed,2,"), std::string::npos);
  EXPECT_NE(csv[3].find(",ok,"), std::string::npos);
  EXPECT_TRUE(Exists(Path("out/plans/tiny.plan.json")));
  EXPECT_TRUE(Exists(Path("out/plans/alexnet.plan.json")));
  EXPECT_FALSE(Exists(Path("out/plans/broken.plan.json")));
  EXPECT_TRUE(Exists(Path("out/plots/alexnet.layout.svg")));
  EXPECT_TRUE(Exists(Path("out/plots/alexnet.memory.svg")));
  auto v = RunRoam({"validate", DataPath("tiny.graph.json"), Path("out/plans/tiny.plan.json")});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  ResultSet set = ParseResults(ReadFile(Path("out/summary.json")), "summary.json");
  ASSERT_EQ(set.runs.size(), 3u);
  EXPECT_EQ(set.runs[1].exit_code, 2);
  std::string html = ReadFile(Path("out/report.html"));
  EXPECT_NE(html.find("<table id=\"summary\">"), std::string::npos);
  EXPECT_NE(html.find("alexnet layout"), std::string::npos);
}

// The default mode runs the optimizer in the job's arena; its account becomes CSV columns.
TEST_F(BatchCliTest, RoamModeRecordsTheOptimizersAccount) {
  auto r = RunRoam({"batch", Config(), "--set", "planner.time_limit_s=30", "--set",
                    "planner.leaf_order.time_limit_s=1", "-o", Path("out"), "--jobs", "1",
                    "--threads-per-job", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ResultSet set = ParseResults(ReadFile(Path("out/summary.json")), "summary.json");
  ASSERT_EQ(set.runs.size(), 1u);
  const RunRecord& run = set.runs[0];
  EXPECT_EQ(run.spec.mode, Mode::kRoam);
  EXPECT_EQ(run.result.method, "roam");
  std::map<std::string, std::string> figures(run.figures.begin(), run.figures.end());
  for (const char* f :
       {"gap [ratio]", "order_outcome", "layout_outcome", "leaves", "leaves_proved_optimal",
        "baseline_won", "optimizer_heuristic_total_peak [B]"})
    EXPECT_EQ(figures.count(f), 1u) << f;
  EXPECT_GT(std::stoi(figures["leaves"]), 0);
  // Never worse than the optimizer's own best baseline, nor than PyTorch; never below the bound.
  EXPECT_LE(run.result.total_peak, std::stoll(figures["optimizer_heuristic_total_peak [B]"]));
  EXPECT_LE(run.result.total_peak, run.pytorch.total_peak);
  EXPECT_GE(run.result.theoretical_peak, run.lower_bound);
  std::string header = Lines(ReadFile(Path("out/summary.csv")))[0];
  EXPECT_NE(header.find(",outcome,gap [ratio],order_outcome,layout_outcome,leaves,"),
            std::string::npos)
      << header;
  ASSERT_EQ(RunRoam({"export-graph", Config(), "-o", Path("g.json")}).exit_code, 0);
  auto v = RunRoam({"validate", Path("g.json"), Path("out/plans/alexnet.plan.json")});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
}

TEST_F(BatchCliTest, AllGoodIsExitZeroAndARerunResumes) {
  std::vector<std::string> args = {
      "batch",  DataPath("tiny.graph.json"), Config(), "--mode", "heuristic", "-o", Path("out"),
      "--quiet"};
  auto first = RunRoam(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find("0 resumed"), std::string::npos);
  // A batch killed before its second run finished has no record for it.
  std::filesystem::remove(Path("out/runs/alexnet.json"));
  std::filesystem::remove(Path("out/summary.csv"));
  auto second = RunRoam(args);
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find("1 resumed"), std::string::npos) << second.out;
  EXPECT_EQ(Lines(ReadFile(Path("out/summary.csv"))).size(), 3u);
  args.push_back("--force");
  EXPECT_NE(RunRoam(args).out.find("0 resumed"), std::string::npos);
}

TEST_F(BatchCliTest, ABatchKilledMidwayResumesWhereItStopped) {
  std::string args;
  std::vector<std::string> presets = {"gpt2-small", "bert-base",    "vit-b16",
                                      "resnet50",   "mobilenet_v2", "gpt2-medium"};
  for (const std::string& p : presets)
    args += " '" + std::string(ROAM_CONFIGS_DIR) + "/" + p + ".yaml'";
  args += " --mode heuristic --jobs 1 --quiet -o '" + Path("out") + "'";
  std::string start = std::string("'") + ROAM_BINARY_PATH + "' batch" + args +
                      " >/dev/null 2>&1 & echo $! > '" + Path("pid") + "'";
  ASSERT_EQ(std::system(start.c_str()), 0);
  const pid_t pid = std::stoi(ReadFile(Path("pid")));
  auto records = [&] {
    std::error_code ec;
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator(Path("out/runs"), ec))
      n += e.path().filename().string()[0] != '.' ? 1 : 0;
    return n;
  };
  for (int i = 0; i < 6000 && records() == 0; ++i) ::usleep(10000);
  ASSERT_GT(records(), 0);
  ::kill(pid, SIGKILL);
  for (int i = 0; i < 500 && ::kill(pid, 0) == 0; ++i) ::usleep(10000);
  const int finished = records();
  auto again =
      RunCommand("/bin/sh", {"-c", std::string("'") + ROAM_BINARY_PATH + "' batch" + args});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find(std::to_string(finished) + " resumed"), std::string::npos)
      << finished << " finished before the kill; " << again.out;
  ResultSet set = ParseResults(ReadFile(Path("out/summary.json")), "summary.json");
  ASSERT_EQ(set.runs.size(), presets.size());
  for (const RunRecord& r : set.runs) {
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_TRUE(Exists(Path("out/plans/" + r.spec.name + ".plan.json")));
  }
}

TEST_F(BatchCliTest, SweepWritesOneRowPerRunWithEveryColumn) {
  auto r = RunRoam({"bench", SmokeSweep(), "-o", Path("bench")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> csv = Lines(ReadFile(Path("bench/summary.csv")));
  ASSERT_EQ(csv.size(), 5u);
  std::string header;
  for (size_t i = 0; i < CsvHeader({"model.batch", "mode"}).size(); ++i)
    header += (i ? "," : "") + CsvHeader({"model.batch", "mode"})[i];
  EXPECT_EQ(csv[0], header);
  ResultSet set = ParseResults(ReadFile(Path("bench/summary.json")), "summary.json");
  ASSERT_EQ(set.runs.size(), 4u);
  for (const RunRecord& run : set.runs) {
    EXPECT_TRUE(run.ok) << run.error;
    EXPECT_EQ(run.seconds.size(), 2u);
    EXPECT_LE(run.result.total_peak, run.pytorch.total_peak);
    EXPECT_LE(run.lower_bound, run.result.theoretical_peak);
  }
  // A bigger batch needs more memory.
  EXPECT_LT(set.runs[0].pytorch.total_peak, set.runs[3].pytorch.total_peak);
  EXPECT_TRUE(Exists(Path("bench/plots/sweep-model.batch.memory.svg")));
  EXPECT_TRUE(Exists(Path("bench/plots/sweep-model.batch.time.svg")));
  EXPECT_NE(ReadFile(Path("bench/table.md")).find("| alexnet model.batch=4 |"), std::string::npos);
  std::string html = ReadFile(Path("bench/report.html"));
  EXPECT_NE(html.find("total peak against model.batch"), std::string::npos);
}

TEST_F(BatchCliTest, ShardsCoverEveryRunOnceAndMergeBackToTheWhole) {
  std::string sweep = SmokeSweep();
  auto whole = RunRoam({"bench", sweep, "-o", Path("whole")});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  std::vector<std::string> dirs;
  std::multiset<std::string> keys;
  for (int i = 0; i < 3; ++i) {
    dirs.push_back(Path("shard" + std::to_string(i)));
    auto r = RunRoam({"bench", sweep, "--shard", std::to_string(i) + "/3", "-o", dirs.back()});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const RunRecord& run : ParseResults(ReadFile(dirs.back() + "/summary.json"), "s").runs)
      keys.insert(run.spec.key);
  }
  ResultSet all = ParseResults(ReadFile(Path("whole/summary.json")), "w");
  EXPECT_EQ(keys.size(), all.runs.size());
  for (const RunRecord& run : all.runs) EXPECT_EQ(keys.count(run.spec.key), 1u);

  std::vector<std::string> merge = {"merge-results"};
  merge.insert(merge.end(), dirs.rbegin(), dirs.rend());
  merge.insert(merge.end(), {"-o", Path("merged")});
  auto m = RunRoam(merge);
  ASSERT_EQ(m.exit_code, 0) << m.err;
  ResultSet merged = ParseResults(ReadFile(Path("merged/summary.json")), "m");
  ASSERT_EQ(merged.runs.size(), all.runs.size());
  for (size_t i = 0; i < all.runs.size(); ++i) {
    EXPECT_EQ(merged.runs[i].spec.key, all.runs[i].spec.key);
    EXPECT_EQ(merged.runs[i].result.total_peak, all.runs[i].result.total_peak);
  }
  EXPECT_TRUE(Exists(Path("merged/report.html")));

  auto missing = RunRoam({"merge-results", dirs[0], dirs[2], "-o", Path("bad")});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("missing shard 1/3"), std::string::npos) << missing.err;
  auto twice = RunRoam({"merge-results", dirs[0], dirs[1], dirs[2], dirs[1], "-o", Path("bad")});
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("given twice"), std::string::npos) << twice.err;
  EXPECT_FALSE(Exists(Path("bad/summary.json")));
}

// docs/batch.md's Slurm job array and GNU parallel scripts, run as they are: each array task
// is a separate process with its SLURM_ARRAY_TASK_ID, then the shards are merged.
TEST_F(BatchCliTest, SlurmArrayAndGnuParallelScriptsShardAndMerge) {
  std::string sweep = SmokeSweep();
  std::string scripts = roam::testing::SourceDir() + "/scripts/cluster/";
  auto whole = RunRoam({"bench", sweep, "-o", Path("whole")});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  for (int i = 0; i < 3; ++i) {
    auto task = roam::testing::RunCommand(
        "/usr/bin/env", {"SLURM_ARRAY_TASK_ID=" + std::to_string(i), "SLURM_ARRAY_TASK_COUNT=3",
                         std::string("ROAM=") + ROAM_BINARY_PATH, "ROAM_SWEEP=" + sweep,
                         "ROAM_OUT=" + Path("slurm"), "bash", scripts + "bench-array.sbatch"});
    ASSERT_EQ(task.exit_code, 0) << task.err;
  }
  auto merge = RunRoam({"merge-results", Path("slurm/shard-0"), Path("slurm/shard-1"),
                        Path("slurm/shard-2"), "-o", Path("slurm/merged")});
  ASSERT_EQ(merge.exit_code, 0) << merge.err;
  auto parallel = roam::testing::RunCommand(
      "/bin/bash", {scripts + "bench-parallel.sh", sweep, "3", Path("parallel"), ROAM_BINARY_PATH});
  ASSERT_EQ(parallel.exit_code, 0) << parallel.out << parallel.err;
  ResultSet all = ParseResults(ReadFile(Path("whole/summary.json")), "w");
  for (const char* dir : {"slurm/merged", "parallel/merged"}) {
    ResultSet merged = ParseResults(ReadFile(Path(std::string(dir) + "/summary.json")), dir);
    ASSERT_EQ(merged.runs.size(), all.runs.size()) << dir;
    for (size_t i = 0; i < all.runs.size(); ++i) {
      EXPECT_EQ(merged.runs[i].spec.key, all.runs[i].spec.key) << dir;
      EXPECT_EQ(merged.runs[i].result.total_peak, all.runs[i].result.total_peak) << dir;
    }
  }
}

// A shard whose run fails does not stop the others: every shard finishes and is merged, and
// the script fails at the end.
TEST_F(BatchCliTest, GnuParallelScriptLetsEveryShardFinishWhenOneFails) {
  Write("broken.graph.json", "{\"format\": \"roam-graph-v1\", \"ops\": [");
  std::string sweep = Write("mixed.yaml", "inputs: [" + Config() +
                                              ", broken.graph.json]\ngrid:\n  model.batch: [1, 2, "
                                              "3]\n  mode: [heuristic]\n");
  std::string scripts = roam::testing::SourceDir() + "/scripts/cluster/";
  auto parallel = roam::testing::RunCommand(
      "/bin/bash", {scripts + "bench-parallel.sh", sweep, "3", Path("p"), ROAM_BINARY_PATH});
  EXPECT_NE(parallel.exit_code, 0) << parallel.out << parallel.err;
  ResultSet merged = ParseResults(ReadFile(Path("p/merged/summary.json")), "merged");
  EXPECT_EQ(merged.runs.size(), 6u);
  int ok = 0;
  for (const auto& r : merged.runs) ok += r.ok ? 1 : 0;
  EXPECT_EQ(ok, 3);
}

TEST_F(BatchCliTest, BadSweepsAndShardsAreUsageErrors) {
  auto r = RunRoam({"bench", Write("s.yaml", "inputs: [nope.yaml]\n"), "-o", Path("o")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("s.yaml: inputs: no such file: nope.yaml"), std::string::npos) << r.err;
  auto s = RunRoam({"batch", Config(), "--shard", "3/3", "-o", Path("o")});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_NE(s.err.find("--shard"), std::string::npos) << s.err;
}

TEST_F(BatchCliTest, PlotDrawsLayoutAndMemory) {
  ASSERT_EQ(RunRoam({"evaluate", DataPath("tiny.graph.json"), "-o", Path("p.json")}).exit_code, 0);
  auto layout = RunRoam(
      {"plot", Path("p.json"), "--graph", DataPath("tiny.graph.json"), "-o", Path("layout.svg")});
  ASSERT_EQ(layout.exit_code, 0) << layout.err;
  EXPECT_NE(layout.out.find("3 buffers in 3 rectangles"), std::string::npos) << layout.out;
  std::string svg = ReadFile(Path("layout.svg"));
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  auto memory = RunRoam({"plot", Path("p.json"), "--graph", DataPath("tiny.graph.json"), "-o",
                         Path("memory.svg"), "--what", "memory"});
  ASSERT_EQ(memory.exit_code, 0) << memory.err;
  EXPECT_NE(ReadFile(Path("memory.svg")).find("pytorch peak"), std::string::npos);
  auto wrong = RunRoam({"plot", Path("p.json"), "--graph", Config(), "-o", Path("x.svg")});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_FALSE(Exists(Path("x.svg")));
}

}  // namespace
}  // namespace roam::batch
