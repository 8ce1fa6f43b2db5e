// Pictures of plans and sweeps as standalone SVG (docs/report.md): written as text, no plotting
// library, so that every picture opens in a browser and embeds in report.html.
//
// In: a graph and its plan (layout), per-step memory profiles (memory), or a table of points
// (line and bar charts). Out: one SVG document per call. Every function is pure and
// deterministic.
//
// Every picture is laid out from its text's measured width (DejaVu Sans, the sans-serif of
// Debian's browsers), so no label leaves its picture or covers another: legends sit below the
// plot (sweep charts: above the panels), wrapped into rows; byte axes tick at round steps of the
// unit they are labelled in; point labels take the first free place around their point. The
// root element has width, height and a viewBox, and scales down to its container
// (max-width:100%).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/plan.h"
#include "core/types.h"

namespace roam::report {

// Escapes &, <, >, " and ' for XML text and attribute values.
std::string XmlEscape(std::string_view text);

// The colour class a buffer is drawn in: its storage root's kind.
enum class BufferClass { kActivation, kGradient, kOptimizerState, kTemporary, kOther };
std::string_view ToString(BufferClass c);
BufferClass ClassOf(TensorKind kind);

struct LayoutPlotParams {
  int width = 1200;  // drawing area, pixels
  int height = 600;
  // Buffers drawn smaller than this many pixels in either direction are merged, per kind, into
  // one rectangle per cell of this size, so a 10,000-op graph stays readable and the file small.
  double min_pixels = 2.0;
  Bytes theoretical_peak = -1;  // drawn as a line when >= 0
  Bytes lower_bound = -1;       // the certified bound, drawn as a line when >= 0
  std::string title;
};

// Counts reported in the SVG itself (data-* attributes of the root) and returned to callers.
struct LayoutPlotStats {
  int rectangles = 0;  // <rect class="buf ..."> elements, aggregates included
  int aggregated_rectangles = 0;
  int buffers = 0;  // buffers drawn, each in exactly one rectangle
};

// Buffers as rectangles: step on x (start .. end + 1), arena offset on y, coloured by class,
// hover titles with tensor ids (the file's ids) and sizes.
std::string LayoutSvg(const Graph& graph, const Plan& plan, const LayoutPlotParams& params,
                      LayoutPlotStats* stats = nullptr);

// One method's memory in use at each step (persistent bytes included).
struct MemorySeries {
  std::string name;
  std::vector<Bytes> bytes;  // per step
  // Persistent bytes plus the arena's height (its fragmentation included): the total peak of
  // the results table. Drawn as a dashed line in the series' colour when >= 0.
  Bytes total_peak = -1;
};

// Memory over time, one polyline per series, each series' peak step marked and labelled, and
// each total peak (when given) as a labelled dashed line.
std::string MemorySvg(const std::vector<MemorySeries>& series, std::string_view title,
                      int width = 1200, int height = 500);

// A line chart over categorical x values: one polyline per series; NaN values are gaps.
struct ChartSeries {
  std::string name;
  std::vector<double> values;  // one per category
};
struct LineChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool y_bytes = false;  // format the y axis as KiB/MiB/GiB
  std::vector<std::string> categories;
  std::vector<ChartSeries> series;
};
std::string LineChartSvg(const LineChart& chart, int width = 900, int height = 450);

// Grouped bars in small multiples: one panel per group of runs, each with its own y scale; the
// categories on x and, within each category, one bar per method in the method's colour (one
// legend for all panels). NaN values draw no bar.
struct BarPanel {
  std::string name;
  std::vector<std::vector<double>> values;  // [method][category]
};
struct BarChart {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool y_bytes = false;  // format the y axes as KiB/MiB/GiB
  std::vector<std::string> categories;
  std::vector<std::string> methods;
  std::vector<BarPanel> panels;
};
// Panels are laid out in as many columns as fit in max_width pixels.
std::string BarChartSvg(const BarChart& chart, int max_width = 1200);

// The width of `text` in pixels at `font_size` in DejaVu Sans (a slight overestimate).
double TextWidth(std::string_view text, double font_size = 12);

// "1.50 GiB" style, for axes and titles.
std::string HumanBytes(double bytes);

}  // namespace roam::report
