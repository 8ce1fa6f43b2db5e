#include <gtest/gtest.h>

#include <algorithm>

#include "batch/batch.h"
#include "core/error.h"

namespace roam::batch {
namespace {

RunRecord Record(const std::string& key, bool ok = true) {
  RunRecord r;
  r.spec.key = key;
  r.spec.name = key;
  r.spec.input = "configs/" + key + ".yaml";
  r.spec.overrides = {"model.batch=2"};
  r.spec.mode = Mode::kModel;
  r.spec.repeats = 3;
  r.spec.params = {{"model.batch", "2"}};
  r.ok = ok;
  r.exit_code = ok ? 0 : 2;
  r.error = ok ? "" : "bad, \"quoted\" input";
  r.graph = key;
  r.ops = 10;
  r.storages = 7;
  r.persistent_bytes = 1000;
  r.result = {"model", 600, 700, 1700};
  r.fragmentation = 1.0 / 7.0;
  r.pytorch = {"pytorch", 800, 2048, 3048};
  r.heuristic = {"lescea+best-fit", 650, 650, 1650};
  r.lower_bound = 500;
  r.seconds = {0.3, 0.1, 0.2};
  r.baseline_seconds = 0.01;
  r.outcome = "order optimal, layout optimal";
  r.figures = {{"order_gap [ratio]", "0.000000"}, {"leaves", key == "b" ? "3" : "2"}};
  return r;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0, end; at < text.size(); at = end + 1) {
    end = text.find('\n', at);
    lines.push_back(text.substr(at, end - at));
  }
  return lines;
}

ResultSet Set(std::vector<std::string> keys, Shard shard, std::vector<std::string> mine) {
  ResultSet s;
  s.kind = "bench";
  s.axes = {"model.batch"};
  s.all_keys = std::move(keys);
  s.shard = shard;
  for (const std::string& k : mine) s.runs.push_back(Record(k));
  return s;
}

TEST(ResultsTest, JsonRoundTripsEveryField) {
  ResultSet set = Set({"a", "b"}, {1, 2}, {"a"});
  set.runs.push_back(Record("b", false));
  set.title = "t";
  ResultSet back = ParseResults(ResultsToJson(set), "x.json");
  EXPECT_EQ(ResultsToJson(back), ResultsToJson(set));
  EXPECT_EQ(back.shard.index, 1);
  EXPECT_EQ(back.runs[0].seconds, (std::vector<double>{0.3, 0.1, 0.2}));
  EXPECT_EQ(back.runs[1].error, "bad, \"quoted\" input");
}

TEST(ResultsTest, CsvHasUnitsInTheHeaderAndOneRowPerRun) {
  ResultSet set = Set({"a", "b"}, {}, {"a"});
  set.runs.push_back(Record("b", false));
  std::string csv = ResultsToCsv(set);
  std::vector<std::string> header = CsvHeader(set.axes);
  EXPECT_EQ(header[5], "model.batch");
  for (const char* column :
       {"total_peak [B]", "pytorch_total_peak [B]", "lower_bound [B]", "heuristic_total_peak [B]",
        "seconds_median [s]", "fragmentation [ratio]"})
    EXPECT_NE(std::find(header.begin(), header.end(), column), header.end()) << column;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  std::vector<std::string> row = CsvRow(set.runs[0], set.axes);
  ASSERT_EQ(row.size(), header.size());
  auto cell = [&](const std::string& column) {
    return row[static_cast<size_t>(std::find(header.begin(), header.end(), column) -
                                   header.begin())];
  };
  EXPECT_EQ(cell("total_peak [B]"), "1700");
  EXPECT_EQ(cell("seconds_median [s]"), "0.200000");
  EXPECT_EQ(cell("seconds_min [s]"), "0.100000");
  EXPECT_EQ(cell("seconds_max [s]"), "0.300000");
  EXPECT_EQ(cell("saving_vs_pytorch [ratio]"), "0.442257");
  EXPECT_EQ(cell("status"), "ok");
  EXPECT_EQ(CsvRow(set.runs[1], set.axes).size(), header.size());
  // The modes' own figures follow, as columns in first-seen order.
  EXPECT_EQ(FigureColumns(set.runs), (std::vector<std::string>{"order_gap [ratio]", "leaves"}));
  std::vector<std::string> lines = Lines(csv);
  EXPECT_NE(lines[0].find(",outcome,order_gap [ratio],leaves"), std::string::npos);
  EXPECT_EQ(lines[1].substr(lines[1].size() - 11), ",0.000000,2");
  // The failed run's error has a comma and quotes: the field is quoted, quotes doubled.
  EXPECT_NE(csv.find("\"bad, \"\"quoted\"\" input\""), std::string::npos);
}

TEST(ResultsTest, MergeTakesEveryShardOnceInRunOrder) {
  std::vector<std::string> keys = {"a", "b", "c", "d"};
  ResultSet merged =
      MergeResults({Set(keys, {1, 2}, {"b", "d"}), Set(keys, {0, 2}, {"a", "c"})}, {"s1", "s0"});
  ASSERT_EQ(merged.runs.size(), 4u);
  for (size_t i = 0; i < keys.size(); ++i) EXPECT_EQ(merged.runs[i].spec.key, keys[i]);
  EXPECT_EQ(merged.shard.count, 1);
}

TEST(ResultsTest, MergeFailsLoudlyOnMissingOrDuplicatedShardsAndRuns) {
  std::vector<std::string> keys = {"a", "b", "c"};
  auto message = [](const std::vector<ResultSet>& sets) {
    std::vector<std::string> names;
    for (size_t i = 0; i < sets.size(); ++i) names.push_back("dir" + std::to_string(i));
    try {
      MergeResults(sets, names);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("merged");
  };
  EXPECT_NE(message({Set(keys, {0, 3}, {"a"}), Set(keys, {2, 3}, {"c"})}).find("missing shard 1/3"),
            std::string::npos);
  EXPECT_NE(message({Set(keys, {0, 2}, {"a"}), Set(keys, {0, 2}, {"a"})})
                .find("shard 0/2 given twice: dir0 and dir1"),
            std::string::npos);
  EXPECT_NE(message({Set(keys, {0, 2}, {"a", "b"}), Set(keys, {1, 2}, {"b", "c"})})
                .find("run \"b\" appears in two shards"),
            std::string::npos);
  EXPECT_NE(message({Set(keys, {0, 2}, {"a"}), Set(keys, {1, 2}, {"c"})}).find("1 run(s) missing"),
            std::string::npos);
  EXPECT_NE(message({Set(keys, {0, 2}, {"a", "b"}), Set({"a", "x"}, {1, 2}, {"c"})})
                .find("not a shard of the same"),
            std::string::npos);
  EXPECT_NE(message({}).find("no result directories"), std::string::npos);
}

TEST(ResultsTest, ExitStatusPrefersInternalFailures) {
  RunRecord ok = Record("a"), bad_input = Record("b", false), internal = Record("c", false);
  internal.exit_code = 1;
  EXPECT_EQ(ExitStatus({ok, ok}), 0);
  EXPECT_EQ(ExitStatus({ok, bad_input}), 2);
  EXPECT_EQ(ExitStatus({bad_input, internal, ok}), 1);
}

TEST(ResultsTest, MedianOfOddAndEvenCounts) {
  EXPECT_EQ(Median({}), 0.0);
  EXPECT_EQ(Median({3, 1, 2}), 2.0);
  EXPECT_EQ(Median({4, 1, 2, 3}), 2.5);
}

}  // namespace
}  // namespace roam::batch
