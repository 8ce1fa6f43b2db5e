#include "report/svg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>

#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/io.h"
#include "report/html.h"
#include "tests/support/test_data.h"
#include "tests/support/training_graph.h"
#include "tests/support/xml.h"

namespace roam::report {
namespace {

using roam::testing::XmlProblem;

Plan BestFitPlan(const Graph& graph) {
  MemoryModel model = BuildMemoryModel(graph);
  std::vector<OpId> order = ScheduleOrder("heuristic", graph, model);
  auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, order));
  return AssemblePlan(graph, model, order, PlaceBuffers("best-fit", intervals, 512), 0);
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(LayoutSvgTest, OneRectanglePerBufferOnSmallGraphs) {
  Graph graph = LoadGraph(roam::testing::DataPath("tiny.graph.json"));
  Plan plan = BestFitPlan(graph);
  LayoutPlotParams params;
  params.theoretical_peak = plan.summary.theoretical_peak;
  params.lower_bound = 2560;
  LayoutPlotStats stats;
  std::string svg = LayoutSvg(graph, plan, params, &stats);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(stats.buffers, 3);
  EXPECT_EQ(stats.rectangles, 3);
  EXPECT_EQ(stats.aggregated_rectangles, 0);
  EXPECT_EQ(Count(svg, "<rect class=\"buf "), 3);
  EXPECT_EQ(Count(svg, "class=\"buf activation\""), 1);
  EXPECT_EQ(Count(svg, "class=\"buf gradient\""), 1);
  // Hover titles give the file's tensor ids and sizes.
  EXPECT_NE(svg.find("<title>tensor 3 (activation): 1536 B at offset"), std::string::npos);
  EXPECT_EQ(Count(svg, "<line class=\"peak\""), 1);
  EXPECT_EQ(Count(svg, "<line class=\"bound\""), 1);
  EXPECT_NE(svg.find("data-buffers=\"3\""), std::string::npos);
}

TEST(LayoutSvgTest, LargeGraphsAggregateTinyBuffersAndAccountForEveryOne) {
  std::mt19937_64 rng(3);
  roam::testing::TrainingGraphOptions options;
  options.layers = 400;  // several thousand ops
  Graph graph = roam::testing::TrainingLikeGraph(rng, options);
  ASSERT_GT(graph.num_ops(), 5000);
  Plan plan = BestFitPlan(graph);
  LayoutPlotStats stats;
  std::string svg = LayoutSvg(graph, plan, {}, &stats);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(stats.buffers, static_cast<int>(plan.buffers.size()));
  EXPECT_GT(stats.aggregated_rectangles, 0);
  EXPECT_LT(stats.rectangles, stats.buffers / 2);
  EXPECT_EQ(Count(svg, "<rect class=\"buf "), stats.rectangles);
  // Every buffer is in exactly one rectangle: the data-count attributes add up.
  std::regex count_re("data-count=\"(\\d+)\"");
  int total = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), count_re);
       it != std::sregex_iterator(); ++it)
    total += std::stoi((*it)[1]);
  EXPECT_EQ(total, stats.buffers);
}

TEST(MemorySvgTest, MarksEachSeriesPeak) {
  std::string svg = MemorySvg({{"roam", {1, 5, 2}}, {"pytorch & co", {3, 3, 9, 4}}}, "m <1>");
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(Count(svg, "<polyline class=\"series\""), 2);
  EXPECT_EQ(Count(svg, "<circle class=\"peak\""), 2);
  EXPECT_NE(svg.find("roam peak 5 B at step 1"), std::string::npos);
  EXPECT_NE(svg.find("pytorch &amp; co peak 9 B at step 2"), std::string::npos);
  EXPECT_NE(svg.find("m &lt;1&gt;"), std::string::npos);
}

TEST(MemorySvgTest, LongSeriesKeepEachPixelColumnsExtremes) {
  std::vector<Bytes> bytes(100000);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<Bytes>(i % 1000);
  bytes[77777] = 5000;
  std::string svg = MemorySvg({{"long", bytes}}, "t", 1200, 500);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_LT(svg.size(), 60000u);
  EXPECT_NE(svg.find("long peak 5000 B at step 77777"), std::string::npos);
  // The peak's column keeps it: some point of the polyline is at the top of the plot area.
  std::string polyline =
      svg.substr(svg.find("points=\""), svg.find("\"><title>long") - svg.find("points=\""));
  double top = 1e9;
  std::regex y_re(",([0-9.]+) ");
  for (auto it = std::sregex_iterator(polyline.begin(), polyline.end(), y_re);
       it != std::sregex_iterator(); ++it)
    top = std::min(top, std::stod((*it)[1]));
  EXPECT_LT(top, 70.0);  // 5000 B is the top of the axis (plus 5%), 40 px below the title
}

TEST(LineChartSvgTest, GapsBreakTheLine) {
  LineChart chart{"t", "x", "y", true, {"1", "2", "3"}, {{"a", {1e6, NAN, 3e6}}, {"b", {1, 2, 3}}}};
  std::string svg = LineChartSvg(chart);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(Count(svg, "<polyline"), 3);
  EXPECT_EQ(Count(svg, "<circle"), 5);
}

TEST(ReportHtmlTest, InlinesTheTableAndEveryFigure) {
  Table table{{"run", "peak"}, {{"a<b", "12"}, {"c", "failed"}}};
  std::string html = ReportHtml("r", {"note"}, table, {{"f1", "<svg></svg>\n"}, {"f2", "<svg/>"}});
  EXPECT_EQ(Count(html, "<tr"), 3);
  EXPECT_EQ(Count(html, "<tr class=\"failed\">"), 1);
  EXPECT_NE(html.find("<td class=\"text\">a&lt;b</td>"), std::string::npos);
  EXPECT_EQ(Count(html, "<figure>"), 2);
  EXPECT_EQ(html.find("src="), std::string::npos);  // nothing external
}

TEST(HumanBytesTest, PicksTheUnit) {
  EXPECT_EQ(HumanBytes(512), "512 B");
  EXPECT_EQ(HumanBytes(1536), "1.5 KiB");
  EXPECT_EQ(HumanBytes(3.0 * 1024 * 1024 * 1024), "3 GiB");
}

}  // namespace
}  // namespace roam::report
