#include "report/svg.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <set>

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
  // The peak's column keeps it: some point of the polyline is at the peak's dot.
  std::string polyline =
      svg.substr(svg.find("points=\""), svg.find("\"><title>long") - svg.find("points=\""));
  double top = 1e9;
  std::regex y_re(",([0-9.]+) ");
  for (auto it = std::sregex_iterator(polyline.begin(), polyline.end(), y_re);
       it != std::sregex_iterator(); ++it)
    top = std::min(top, std::stod((*it)[1]));
  std::smatch dot;
  ASSERT_TRUE(
      std::regex_search(svg, dot, std::regex("class=\"peak\" cx=\"[0-9.]+\" cy=\"([0-9.]+)\"")));
  EXPECT_NEAR(top, std::stod(dot[1]), 0.01);
}

// Every <text> of a picture, with the box its measured width gives it.
struct PlacedText {
  std::string text;
  double x0, y0, x1, y1;
};
std::vector<PlacedText> Texts(const std::string& svg) {
  std::vector<PlacedText> out;
  std::regex text_re(
      "<text x=\"([-0-9.]+)\" y=\"([-0-9.]+)\"( text-anchor=\"(\\w+)\")?"
      "( font-size=\"([0-9.]+)\")?[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text_re);
       it != std::sregex_iterator(); ++it) {
    const std::smatch& m = *it;
    double x = std::stod(m[1]), y = std::stod(m[2]);
    double size = m[6].matched ? std::stod(m[6]) : 12.0;
    double w = TextWidth(m[7].str(), size);
    double x0 = m[4] == "middle" ? x - w / 2 : m[4] == "end" ? x - w : x;
    out.push_back({m[7].str(), x0, y - 0.93 * size, x0 + w, y + 0.24 * size});
  }
  return out;
}

// No text outside the picture's width x height and no two texts overlapping.
std::string LayoutProblem(const std::string& svg) {
  std::smatch size;
  if (!std::regex_search(svg, size, std::regex("width=\"(\\d+)\" height=\"(\\d+)\" viewBox")))
    return "no size";
  const double width = std::stod(size[1]), height = std::stod(size[2]);
  std::vector<PlacedText> texts = Texts(svg);
  if (texts.empty()) return "no texts";
  for (const PlacedText& t : texts)
    if (t.x0 < 0 || t.y0 < 0 || t.x1 > width || t.y1 > height) return "'" + t.text + "' outside";
  for (size_t a = 0; a < texts.size(); ++a)
    for (size_t b = a + 1; b < texts.size(); ++b)
      if (std::min(texts[a].x1, texts[b].x1) - std::max(texts[a].x0, texts[b].x0) > 0.5 &&
          std::min(texts[a].y1, texts[b].y1) - std::max(texts[a].y0, texts[b].y0) > 0.5)
        return "'" + texts[a].text + "' overlaps '" + texts[b].text + "'";
  return "";
}

// The y tick labels (anchored at their end, class tick), in order.
std::vector<std::string> YTicks(const std::string& svg) {
  std::vector<std::string> out;
  std::regex tick_re("text-anchor=\"end\" class=\"tick\">([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tick_re);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

TEST(MemorySvgTest, DrawsEachTotalPeakWithItsFragmentation) {
  const Bytes gib = Bytes{1} << 30;
  std::string svg = MemorySvg({{"roam", {gib, 33 * gib, 2 * gib}, 33 * gib + gib / 2},
                               {"pytorch", {gib, 33 * gib, 2 * gib}, 35 * gib}},
                              "gpt2-xl: memory over time");
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(LayoutProblem(svg), "");
  EXPECT_EQ(Count(svg, "<line class=\"total-peak\""), 2);
  EXPECT_NE(svg.find("roam total peak " + std::to_string(33 * gib + gib / 2) + " B"),
            std::string::npos);
  EXPECT_NE(svg.find(">roam total 33.5 GiB</text>"), std::string::npos);
  EXPECT_NE(svg.find(">pytorch total 35 GiB</text>"), std::string::npos);
  // The axis reaches the higher total peak, at round steps of GiB.
  std::vector<std::string> ticks = YTicks(svg);
  ASSERT_FALSE(ticks.empty());
  EXPECT_EQ(ticks[0], "0 GiB");
  EXPECT_EQ(ticks[1], "10 GiB");
  EXPECT_EQ(ticks.back(), "40 GiB");
}

TEST(MemorySvgTest, PeakLabelsStayInsideThePlotAndClearOfEachOther) {
  // Peaks at the top of the axis (ViT-B/16's), at the same step, close in value.
  std::string svg = MemorySvg({{"roam", {1, 1000, 999}},
                               {"pytorch", {1, 1001, 2}},
                               {"best heuristic (lescea+llfb)", {1, 1002, 2}}},
                              "vit-b16: memory over time", 600, 300);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(LayoutProblem(svg), "");
}

TEST(AxisTest, ByteTicksAreRoundInTheUnitTheyAreWrittenIn) {
  // A 4.2 GiB peak: 0.5 or 1 GiB steps, never 500 MiB steps written as 1.95 / 2.93 GiB.
  const double gib = 1024.0 * 1024 * 1024;
  std::string svg = MemorySvg({{"a", {0, static_cast<Bytes>(4.2 * gib)}}}, "t");
  std::vector<std::string> ticks = YTicks(svg);
  ASSERT_GE(ticks.size(), 4u);
  for (size_t i = 0; i < ticks.size(); ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(ticks[i], m, std::regex("([0-9.]+) GiB"))) << ticks[i];
    double step = std::stod(std::regex_replace(ticks[1], std::regex(" GiB"), ""));
    EXPECT_TRUE(step == 0.5 || step == 1 || step == 2) << ticks[1];
    EXPECT_DOUBLE_EQ(std::stod(m[1]), static_cast<double>(i) * step);
  }
  // Small axes stay in bytes with whole steps.
  for (const std::string& t : YTicks(MemorySvg({{"a", {0, 5}}}, "t")))
    EXPECT_TRUE(std::regex_match(t, std::regex("\\d+ B"))) << t;
}

TEST(LayoutSvgTest, TheLegendFitsItsLongestName) {
  Graph graph = LoadGraph(roam::testing::DataPath("tiny.graph.json"));
  Plan plan = BestFitPlan(graph);
  LayoutPlotParams params;
  params.width = 200;  // narrower than the legend: it wraps
  params.height = 120;
  params.theoretical_peak = plan.summary.theoretical_peak;
  params.lower_bound = 2560;
  params.title = "a title much longer than the drawing area it names";
  std::string svg = LayoutSvg(graph, plan, params);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(LayoutProblem(svg), "");
  EXPECT_NE(svg.find("max-width:100%"), std::string::npos);
  EXPECT_EQ(Count(svg, "<line class=\"arena\""), 1);
}

TEST(LineChartSvgTest, GapsBreakTheLine) {
  LineChart chart{"t", "x", "y", true, {"1", "2", "3"}, {{"a", {1e6, NAN, 3e6}}, {"b", {1, 2, 3}}}};
  std::string svg = LineChartSvg(chart);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(LayoutProblem(svg), "");
  EXPECT_EQ(Count(svg, "<polyline"), 3);
  EXPECT_EQ(Count(svg, "<circle cx"), 5);
}

TEST(LineChartSvgTest, CrowdedCategoriesAreThinnedNotOverlapped) {
  LineChart chart{"trade-off", "budget (% of the no-remat peak)", "%", false, {}, {{"a", {}}}};
  for (int i = 100; i > 0; i -= 2) {
    chart.categories.push_back(std::to_string(i) + "%");
    chart.series[0].values.push_back(i);
  }
  std::string svg = LineChartSvg(chart);
  EXPECT_EQ(LayoutProblem(svg), "");
  EXPECT_LT(Count(svg, "class=\"tick\">"), 50 + 10);
}

TEST(BarChartSvgTest, PanelsOfGroupedBarsWithOneColourPerMethod) {
  BarChart chart{"total peak against mode",
                 "mode",
                 "total peak",
                 true,
                 {"heuristic", "model", "roam"},
                 {"planned", "pytorch", "best heuristic", "certified bound"},
                 {}};
  const double mib = 1024.0 * 1024;
  for (int p = 0; p < 6; ++p) {
    BarPanel panel{"gpt2-xl model.batch=" + std::to_string(p) + " planner.time_limit=600", {}};
    for (int m = 0; m < 4; ++m)
      panel.values.push_back({(100.0 + p * 50 + m) * mib, m == 0 ? NAN : 90 * mib, 80 * mib});
    chart.panels.push_back(panel);
  }
  std::string svg = BarChartSvg(chart);
  EXPECT_EQ(XmlProblem(svg), "");
  EXPECT_EQ(LayoutProblem(svg), "");
  EXPECT_EQ(Count(svg, "<polyline"), 0);
  EXPECT_EQ(Count(svg, "<rect class=\"bar\""), 6 * 4 * 3 - 6);
  std::set<std::string> colours;
  std::regex legend_re("class=\"legend\"[^>]*fill=\"(#[0-9a-f]+)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), legend_re);
       it != std::sregex_iterator(); ++it)
    colours.insert((*it)[1]);
  EXPECT_EQ(colours.size(), 4u);
  std::smatch width;
  ASSERT_TRUE(std::regex_search(svg, width, std::regex("width=\"(\\d+)\"")));
  EXPECT_LE(std::stoi(width[1]), 1200);
}

TEST(TextWidthTest, MeasuresDejaVuSans) {
  EXPECT_EQ(TextWidth(""), 0);
  EXPECT_NEAR(TextWidth("0000", 12), 4 * 1303 / 2048.0 * 12 * 1.03, 1e-9);
  EXPECT_LT(TextWidth("iiii"), TextWidth("mmmm"));
  EXPECT_GT(TextWidth("best heuristic (lescea+llfb)"), 150);
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
