// End-to-end: `roam layout` with the search engine (the default) and the ILP, run as the real
// binary on MiniMalloc CSV files.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "core/io.h"
#include "layout/csv.h"
#include "layout/layout.h"
#include "tests/layout/instances.h"
#include "tests/support/run_command.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

using testing::DataPath;
using testing::RunRoam;
namespace fs = std::filesystem;

using LayoutCli = testing::TempDirTest;

std::string ToCsv(std::span<const Interval> in) {
  std::ostringstream out;
  out << "id,lower,upper,size\n";
  for (size_t i = 0; i < in.size(); ++i)
    out << "b" << i << ',' << in[i].start << ',' << in[i].end + 1 << ',' << in[i].size << '\n';
  return out.str();
}

TEST_F(LayoutCli, SearchIsTheDefaultAndWritesTheGoldenSolution) {
  std::string out = Path("solution.csv");
  auto r = RunRoam({"layout", DataPath("ilp/layout_small.csv"), "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("engine            search"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("minimal           yes, proven"), std::string::npos) << r.out;
  EXPECT_EQ(ReadFile(out), ReadFile(DataPath("ilp/layout_small.solution.csv")));
}

TEST_F(LayoutCli, BothEnginesProveTheSameHeightOnAPerfectPacking) {
  std::mt19937_64 rng(11);
  auto in = testing::PerfectPacking(rng, 12, 256, 12, 16);
  std::string problem = Write("p.csv", ToCsv(in));
  for (const char* engine : {"search", "ilp"}) {
    auto r = RunRoam({"layout", problem, "--engine", engine, "--json", "--time-limit", "30"});
    ASSERT_EQ(r.exit_code, 0) << engine << r.err;
    auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["engine"], engine);
    EXPECT_EQ(doc["height"], 256) << engine;
    EXPECT_TRUE(doc["proven_minimal"].get<bool>()) << engine;
  }
}

TEST_F(LayoutCli, AnInfeasibleCapacityExitsOneWithTheBestHeightAndWritesNothing) {
  // A small instance whose optimum is above max-live, so the capacity max-live is infeasible
  // only by search.
  std::mt19937_64 rng(12);
  std::vector<Interval> in;
  Bytes optimum = 0;
  while (true) {
    in = testing::RandomIntervals(rng, 8, 9, 10);
    layout::LayoutParams params;
    optimum = layout::SolveLayout(in, 1, params).height;
    if (optimum > MaxLiveBytes(in)) break;
  }
  std::string problem = Write("p.csv", ToCsv(in));
  std::string out = Path("solution.csv");
  const std::string capacity = std::to_string(optimum - 1);
  auto r = RunRoam({"layout", problem, "--capacity", capacity, "-o", out, "--json"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("capacity of " + capacity + " B was possible (best height"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
  auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["status"], "infeasible");
  EXPECT_FALSE(doc["fits"].get<bool>());
  EXPECT_EQ(doc["lower_bound"], optimum);
  EXPECT_GE(doc["height"].get<Bytes>(), optimum);

  auto fits = RunRoam({"layout", problem, "--capacity", std::to_string(optimum), "-o", out});
  EXPECT_EQ(fits.exit_code, 0) << fits.err;
  EXPECT_TRUE(fs::exists(out));
}

TEST_F(LayoutCli, AlignmentOffsetAndHintColumnsAreHonoured) {
  std::string problem = Write("p.csv",
                              "id,lower,upper,size,alignment,offset,hint\n"
                              "a,0,10,3,1,,0\n"
                              "b,0,10,4,4,8,8\n"
                              "c,5,15,2,2,,4\n");
  std::string out = Path("solution.csv");
  auto r = RunRoam({"layout", problem, "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto solution = layout::ParseLayoutCsv(ReadFile(out), out);
  EXPECT_TRUE(solution.has_alignment);
  ASSERT_EQ(solution.rows.size(), 3u);
  EXPECT_EQ(solution.rows[1].offset, 8);  // fixed
  EXPECT_EQ(solution.rows[1].alignment, 4);
  EXPECT_EQ(solution.rows[2].offset % 2, 0);  // aligned
  EXPECT_EQ(ReadFile(out).substr(0, 37), "id,lower,upper,size,alignment,offset\n");

  auto ilp = RunRoam({"layout", problem, "--engine", "ilp"});
  EXPECT_EQ(ilp.exit_code, 2);
  EXPECT_NE(ilp.err.find("does not support the alignment and offset columns"), std::string::npos)
      << ilp.err;
}

TEST_F(LayoutCli, MiniMallocsOrderIsTheDefaultAndFitsWithFewerNodesWhereDurationsMatter) {
  // A suite-like packing (1 KiB units, 250 buffers) that the preorders by duration fit in a
  // few thousand nodes and the library's by sections in over 11,000 (layout_test's
  // RankingByDurationFitsAPackingTheSectionCountsMissWithinABudget).
  std::mt19937_64 rng(28);
  auto in = testing::PerfectPacking(rng, 250, 1 << 20, 1024, 1024);
  std::string problem = Write("p.csv", ToCsv(in));
  std::int64_t nodes[2] = {0, 0};
  for (int k = 0; k < 2; ++k) {
    std::vector<std::string> args = {"layout",       problem, "--capacity", "1048576",
                                     "--time-limit", "60",    "--json"};
    if (k == 1) args.insert(args.end(), {"--order", "roam"});
    auto r = RunRoam(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto doc = nlohmann::json::parse(r.out);
    EXPECT_TRUE(doc["fits"].get<bool>());
    nodes[k] = doc["nodes"].get<std::int64_t>();
  }
  EXPECT_LT(3 * nodes[0], nodes[1]);
  auto bad = RunRoam({"layout", problem, "--order", "alphabetical"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("alphabetical"), std::string::npos) << bad.err;
}

TEST_F(LayoutCli, CollidingFixedOffsetsAndUnknownEnginesAreBadInput) {
  std::string problem = Write("p.csv", "id,lower,upper,size,offset\na,0,10,4,0\nb,5,15,4,2\n");
  auto r = RunRoam({"layout", problem});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("p.csv: layout: fixed offsets collide"), std::string::npos) << r.err;
  auto engine = RunRoam({"layout", DataPath("ilp/layout_small.csv"), "--engine", "gurobi"});
  EXPECT_EQ(engine.exit_code, 2);
  EXPECT_NE(engine.err.find("gurobi"), std::string::npos) << engine.err;
}

// --repack after the search: a valid solution within the capacity, never higher than the
// search's; the columns it cannot honour and the ilp engine are bad input.
TEST_F(LayoutCli, RepackingWritesAValidSolutionAndRefusesWhatItCannotHonour) {
  std::mt19937_64 rng(5);
  auto in = testing::PerfectPacking(rng, 80, 1024, 60, 16);
  std::string problem = Write("p.csv", ToCsv(in));
  std::string out = Path("solution.csv");
  auto r =
      RunRoam({"layout", problem, "--repack", "50", "--capacity", "1024", "--json", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["height"], 1024);
  const layout::CsvProblem solved = layout::LoadLayoutCsv(out);
  std::vector<Bytes> offsets;
  for (const layout::CsvRow& row : solved.rows) offsets.push_back(row.offset);
  EXPECT_EQ(CheckLayout(layout::CsvIntervals(solved.rows), offsets, 1), "");
  auto aligned = RunRoam(
      {"layout", Write("a.csv", "id,lower,upper,size,alignment\na,0,10,4,2\n"), "--repack", "5"});
  EXPECT_EQ(aligned.exit_code, 2);
  EXPECT_NE(aligned.err.find("--repack does not support"), std::string::npos) << aligned.err;
  auto ilp = RunRoam({"layout", problem, "--engine", "ilp", "--repack", "5"});
  EXPECT_EQ(ilp.exit_code, 2);
  EXPECT_NE(ilp.err.find("--engine ilp"), std::string::npos) << ilp.err;
}

}  // namespace
}  // namespace roam
