#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <tuple>

#include "core/memory_model.h"

namespace roam::report {
namespace {

constexpr int kLeft = 100, kRight = 190, kTop = 40, kBottom = 50;
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string Num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

std::string Short(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

const char* ClassColour(BufferClass c) {
  switch (c) {
    case BufferClass::kActivation:
      return "#4e79a7";
    case BufferClass::kGradient:
      return "#f28e2b";
    case BufferClass::kOptimizerState:
      return "#59a14f";
    case BufferClass::kTemporary:
      return "#e15759";
    case BufferClass::kOther:
      break;
  }
  return "#9c9c9c";
}

// Tick values 0, step, 2*step, ... covering [0, max] with about `count` ticks of a 1-2-5 step.
std::vector<double> Ticks(double max, int count) {
  if (max <= 0) return {0.0};
  double raw = max / count;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  double step = mag;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * mag;
    if (step >= raw) break;
  }
  std::vector<double> ticks;
  for (double t = 0; t <= max * 1.0000001; t += step) ticks.push_back(t);
  return ticks;
}

// Byte axes tick at 1-2-5 multiples of the unit the maximum is best shown in.
std::vector<double> ByteTicks(double max, int count) {
  // The largest unit no bigger than one tick step, so labels are round numbers of it.
  double unit = 1;
  while (max / count / unit >= 1024 && unit < 1024.0 * 1024 * 1024 * 1024) unit *= 1024;
  std::vector<double> ticks = Ticks(max / unit, count);
  for (double& t : ticks) t *= unit;
  return ticks;
}

std::string SvgOpen(int width, int height, std::string_view extra = {}) {
  std::ostringstream out;
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" viewBox=\"0 0 " << width << " " << height << "\" font-family=\"sans-serif\""
      << " font-size=\"12\"" << extra << ">\n"
      << "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" << width << "\" height=\"" << height
      << "\" fill=\"white\"/>\n";
  return out.str();
}

void Title(std::ostringstream& out, std::string_view title, int width) {
  if (title.empty()) return;
  out << "<text x=\"" << width / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"15\">"
      << XmlEscape(title) << "</text>\n";
}

// Axes with y ticks (bytes or plain numbers) for a plot area at (kLeft, kTop) of w x h.
void YAxis(std::ostringstream& out, int w, int h, double ymax, bool bytes, std::string_view label) {
  std::vector<double> ticks = bytes ? ByteTicks(ymax, 6) : Ticks(ymax, 6);
  for (double t : ticks) {
    double y = kTop + h - (ymax > 0 ? t / ymax * h : 0);
    out << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + w << "\" y1=\"" << Num(y) << "\" y2=\""
        << Num(y) << "\" stroke=\"#e6e6e6\"/>\n";
    out << "<text x=\"" << kLeft - 6 << "\" y=\"" << Num(y + 4) << "\" text-anchor=\"end\">"
        << XmlEscape(bytes ? HumanBytes(t) : Short(t)) << "</text>\n";
  }
  out << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft << "\" y1=\"" << kTop << "\" y2=\""
      << kTop + h << "\" stroke=\"black\"/>\n";
  out << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + w << "\" y1=\"" << kTop + h << "\" y2=\""
      << kTop + h << "\" stroke=\"black\"/>\n";
  if (!label.empty())
    out << "<text transform=\"translate(16," << kTop + h / 2
        << ") rotate(-90)\" text-anchor=\"middle\">" << XmlEscape(label) << "</text>\n";
}

void XLabel(std::ostringstream& out, int w, int h, std::string_view label) {
  out << "<text x=\"" << kLeft + w / 2 << "\" y=\"" << kTop + h + 40 << "\" text-anchor=\"middle\">"
      << XmlEscape(label) << "</text>\n";
}

void StepTicks(std::ostringstream& out, int w, int h, int steps) {
  for (double t : Ticks(steps, 8)) {
    double x = kLeft + (steps > 0 ? t / steps * w : 0);
    out << "<line x1=\"" << Num(x) << "\" x2=\"" << Num(x) << "\" y1=\"" << kTop + h << "\" y2=\""
        << kTop + h + 5 << "\" stroke=\"black\"/>\n";
    out << "<text x=\"" << Num(x) << "\" y=\"" << kTop + h + 18 << "\" text-anchor=\"middle\">"
        << static_cast<long long>(t) << "</text>\n";
  }
}

void LegendEntry(std::ostringstream& out, int x, int y, const char* colour, std::string_view name,
                 bool line) {
  if (line)
    out << "<line x1=\"" << x << "\" x2=\"" << x + 14 << "\" y1=\"" << y - 4 << "\" y2=\"" << y - 4
        << "\" stroke=\"" << colour << "\" stroke-width=\"2\"/>\n";
  else
    out << "<rect class=\"legend\" x=\"" << x << "\" y=\"" << y - 10 << "\" width=\"12\" "
        << "height=\"12\" fill=\"" << colour << "\"/>\n";
  out << "<text x=\"" << x + 20 << "\" y=\"" << y << "\">" << XmlEscape(name) << "</text>\n";
}

}  // namespace

std::string XmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string_view ToString(BufferClass c) {
  switch (c) {
    case BufferClass::kActivation:
      return "activation";
    case BufferClass::kGradient:
      return "gradient";
    case BufferClass::kOptimizerState:
      return "optimizer state";
    case BufferClass::kTemporary:
      return "temporary";
    case BufferClass::kOther:
      break;
  }
  return "other";
}

BufferClass ClassOf(TensorKind kind) {
  switch (kind) {
    case TensorKind::kActivation:
      return BufferClass::kActivation;
    case TensorKind::kGradient:
      return BufferClass::kGradient;
    case TensorKind::kOptimizerState:
      return BufferClass::kOptimizerState;
    case TensorKind::kTemporary:
      return BufferClass::kTemporary;
    default:
      return BufferClass::kOther;
  }
}

std::string HumanBytes(double bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (std::fabs(bytes) >= 1024.0 && unit < 4) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[48];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  else
    std::snprintf(text, sizeof text, bytes >= 999.5 ? "%.0f %s" : "%.3g %s", bytes, kUnits[unit]);
  return text;
}

std::string LayoutSvg(const Graph& graph, const Plan& plan, const LayoutPlotParams& params,
                      LayoutPlotStats* stats) {
  const int w = params.width, h = params.height;
  const int steps = std::max<int>(1, static_cast<int>(plan.order.size()));
  Bytes top =
      std::max({plan.summary.actual_peak, params.theoretical_peak, params.lower_bound, Bytes{1}});
  const double sx = static_cast<double>(w) / steps;
  const double sy = static_cast<double>(h) / static_cast<double>(top);
  LayoutPlotStats counts;

  std::ostringstream body;
  // Small buffers go into per-class cells; a cell is drawn as the bounding box of its members.
  struct Cell {
    double x0 = 1e300, y0 = 1e300, x1 = -1e300, y1 = -1e300;
    int count = 0;
    Bytes bytes = 0;
    std::vector<ExternalId> ids;
  };
  std::map<std::tuple<int, long long, long long>, Cell> cells;
  const double cell = std::max(4.0, 4.0 * params.min_pixels);
  for (const Buffer& b : plan.buffers) {
    const Tensor& t = graph.tensors[static_cast<size_t>(b.tensor)];
    BufferClass c = ClassOf(t.kind);
    double x0 = kLeft + b.start * sx, bw = (b.end - b.start + 1) * sx;
    double bh = static_cast<double>(b.size) * sy;
    double y0 = kTop + h - static_cast<double>(b.offset + b.size) * sy;
    ++counts.buffers;
    if (bw >= params.min_pixels && bh >= params.min_pixels) {
      ++counts.rectangles;
      body << "<rect class=\"buf "
           << (c == BufferClass::kOptimizerState ? "optimizer-state" : ToString(c)) << "\" x=\""
           << Num(x0) << "\" y=\"" << Num(y0) << "\" width=\"" << Num(bw) << "\" height=\""
           << Num(bh) << "\" fill=\"" << ClassColour(c)
           << "\" stroke=\"white\" stroke-width=\"0.3\" data-count=\"1\"><title>tensor " << t.ext_id
           << " (" << ToString(t.kind) << "): " << b.size << " B at offset " << b.offset
           << ", steps " << b.start << "-" << b.end << "</title></rect>\n";
      continue;
    }
    auto key = std::make_tuple(static_cast<int>(c), static_cast<long long>((x0 + bw / 2) / cell),
                               static_cast<long long>((y0 + bh / 2) / cell));
    Cell& g = cells[key];
    g.x0 = std::min(g.x0, x0);
    g.y0 = std::min(g.y0, y0);
    g.x1 = std::max(g.x1, x0 + bw);
    g.y1 = std::max(g.y1, y0 + bh);
    ++g.count;
    g.bytes += b.size;
    if (g.ids.size() < 8) g.ids.push_back(t.ext_id);
  }
  for (const auto& [key, g] : cells) {
    BufferClass c = static_cast<BufferClass>(std::get<0>(key));
    ++counts.rectangles;
    ++counts.aggregated_rectangles;
    double gw = std::max(g.x1 - g.x0, 1.0), gh = std::max(g.y1 - g.y0, 1.0);
    body << "<rect class=\"buf aggregate "
         << (c == BufferClass::kOptimizerState ? "optimizer-state" : ToString(c)) << "\" x=\""
         << Num(g.x0) << "\" y=\"" << Num(g.y0) << "\" width=\"" << Num(gw) << "\" height=\""
         << Num(gh) << "\" fill=\"" << ClassColour(c) << "\" fill-opacity=\"0.6\" data-count=\""
         << g.count << "\"><title>" << g.count << " small " << ToString(c) << " buffers, "
         << g.bytes << " B in all; tensors ";
    for (size_t i = 0; i < g.ids.size(); ++i) body << (i ? ", " : "") << g.ids[i];
    if (static_cast<size_t>(g.count) > g.ids.size()) body << ", ...";
    body << "</title></rect>\n";
  }

  std::ostringstream out;
  const int width = kLeft + w + kRight, height = kTop + h + kBottom;
  char data[160];
  std::snprintf(data, sizeof data,
                " data-rectangles=\"%d\" data-aggregated=\"%d\" data-buffers=\"%d\"",
                counts.rectangles, counts.aggregated_rectangles, counts.buffers);
  out << SvgOpen(width, height, data);
  Title(out, params.title.empty() ? plan.graph + ": arena layout" : params.title, width);
  YAxis(out, w, h, static_cast<double>(top), true, "arena offset");
  StepTicks(out, w, h, steps);
  XLabel(out, w, h, "step");
  out << body.str();
  auto hline = [&](Bytes value, const char* colour, const char* dash, const std::string& name,
                   int legend_y) {
    double y = kTop + h - static_cast<double>(value) * sy;
    out << "<line class=\"" << (dash[0] == '6' ? "peak" : "bound") << "\" x1=\"" << kLeft
        << "\" x2=\"" << kLeft + w << "\" y1=\"" << Num(y) << "\" y2=\"" << Num(y) << "\" stroke=\""
        << colour << "\" stroke-width=\"1.5\" stroke-dasharray=\"" << dash << "\"><title>"
        << XmlEscape(name) << ": " << value << " B</title></line>\n";
    out << "<line x1=\"" << kLeft + w + 12 << "\" x2=\"" << kLeft + w + 26 << "\" y1=\""
        << legend_y - 4 << "\" y2=\"" << legend_y - 4 << "\" stroke=\"" << colour
        << "\" stroke-width=\"1.5\" stroke-dasharray=\"" << dash << "\"/>\n";
    out << "<text x=\"" << kLeft + w + 32 << "\" y=\"" << legend_y << "\">" << XmlEscape(name)
        << "</text>\n";
  };
  int ly = kTop + 10;
  for (BufferClass c :
       {BufferClass::kActivation, BufferClass::kGradient, BufferClass::kOptimizerState,
        BufferClass::kTemporary, BufferClass::kOther}) {
    LegendEntry(out, kLeft + w + 12, ly, ClassColour(c), ToString(c), false);
    ly += 18;
  }
  if (params.theoretical_peak >= 0)
    hline(params.theoretical_peak, "black", "6,3", "theoretical peak", ly), ly += 18;
  if (params.lower_bound >= 0) hline(params.lower_bound, "#d62728", "2,2", "certified bound", ly);
  out << "</svg>\n";
  if (stats != nullptr) *stats = counts;
  return out.str();
}

std::string MemorySvg(const std::vector<MemorySeries>& series, std::string_view title, int width,
                      int height) {
  const int w = width - kLeft - kRight, h = height - kTop - kBottom;
  size_t steps = 1;
  Bytes top = 1;
  for (const MemorySeries& s : series) {
    steps = std::max(steps, s.bytes.size());
    for (Bytes b : s.bytes) top = std::max(top, b);
  }
  top = top + top / 20;
  const double sx = static_cast<double>(w) / static_cast<double>(std::max<size_t>(1, steps - 1));
  const double sy = static_cast<double>(h) / static_cast<double>(top);
  std::ostringstream out;
  out << SvgOpen(width, height);
  Title(out, title, width);
  YAxis(out, w, h, static_cast<double>(top), true, "memory in use");
  StepTicks(out, w, h, static_cast<int>(steps - 1));
  XLabel(out, w, h, "step");
  int ly = kTop + 10;
  for (size_t i = 0; i < series.size(); ++i) {
    const MemorySeries& s = series[i];
    const char* colour = kPalette[i % std::size(kPalette)];
    if (s.bytes.empty()) continue;
    out << "<polyline class=\"series\" fill=\"none\" stroke=\"" << colour
        << "\" stroke-width=\"1.5\" points=\"";
    auto point = [&](size_t k) {
      out << Num(kLeft + static_cast<double>(k) * sx) << ","
          << Num(kTop + h - static_cast<double>(s.bytes[k]) * sy) << " ";
    };
    if (s.bytes.size() <= 2 * static_cast<size_t>(w)) {
      for (size_t k = 0; k < s.bytes.size(); ++k) point(k);
    } else {
      // More steps than pixels: per pixel column only its lowest and highest step, in step
      // order, which draws the same picture (peaks included) in a file a few times smaller.
      const size_t columns = static_cast<size_t>(w);
      for (size_t c = 0; c < columns; ++c) {
        size_t begin = c * s.bytes.size() / columns, end = (c + 1) * s.bytes.size() / columns;
        if (begin >= end) continue;
        auto lo = std::min_element(s.bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                                   s.bytes.begin() + static_cast<std::ptrdiff_t>(end));
        auto hi = std::max_element(s.bytes.begin() + static_cast<std::ptrdiff_t>(begin),
                                   s.bytes.begin() + static_cast<std::ptrdiff_t>(end));
        size_t a = static_cast<size_t>(lo - s.bytes.begin());
        size_t b = static_cast<size_t>(hi - s.bytes.begin());
        point(std::min(a, b));
        if (a != b) point(std::max(a, b));
      }
    }
    out << "\"><title>" << XmlEscape(s.name) << "</title></polyline>\n";
    auto peak = std::max_element(s.bytes.begin(), s.bytes.end());
    size_t k = static_cast<size_t>(peak - s.bytes.begin());
    double px = kLeft + static_cast<double>(k) * sx;
    double py = kTop + h - static_cast<double>(*peak) * sy;
    out << "<circle class=\"peak\" cx=\"" << Num(px) << "\" cy=\"" << Num(py)
        << "\" r=\"4\" fill=\"" << colour << "\"><title>" << XmlEscape(s.name) << " peak " << *peak
        << " B at step " << k << "</title></circle>\n";
    // Labels near the right edge grow leftwards, clear of the legend.
    const bool right = px > kLeft + 0.75 * w;
    out << "<text x=\"" << Num(right ? px - 6 : px + 6) << "\" y=\""
        << Num(py - 6 - 14.0 * static_cast<double>(i)) << "\" fill=\"" << colour
        << (right ? "\" text-anchor=\"end\">" : "\">")
        << XmlEscape(HumanBytes(static_cast<double>(*peak))) << " @ " << k << "</text>\n";
    LegendEntry(out, kLeft + w + 12, ly, colour, s.name, true);
    ly += 18;
  }
  out << "</svg>\n";
  return out.str();
}

std::string LineChartSvg(const LineChart& chart, int width, int height) {
  const int w = width - kLeft - kRight, h = height - kTop - kBottom;
  // The legend gets the room its longest name needs (about 7 pixels a character).
  size_t longest = 0;
  for (const ChartSeries& s : chart.series) longest = std::max(longest, s.name.size());
  width += std::max(0, 7 * static_cast<int>(longest) + 40 - kRight);
  double top = 0;
  for (const ChartSeries& s : chart.series)
    for (double v : s.values)
      if (std::isfinite(v)) top = std::max(top, v);
  top = top > 0 ? top * 1.05 : 1.0;
  const size_t n = chart.categories.size();
  auto xpos = [&](size_t i) {
    return kLeft + (n <= 1 ? w / 2.0 : static_cast<double>(i) * w / static_cast<double>(n - 1));
  };
  std::ostringstream out;
  out << SvgOpen(width, height);
  Title(out, chart.title, width);
  YAxis(out, w, h, top, chart.y_bytes, chart.y_label);
  XLabel(out, w, h, chart.x_label);
  for (size_t i = 0; i < n; ++i)
    out << "<text x=\"" << Num(xpos(i)) << "\" y=\"" << kTop + h + 18
        << "\" text-anchor=\"middle\">" << XmlEscape(chart.categories[i]) << "</text>\n";
  int ly = kTop + 10;
  for (size_t si = 0; si < chart.series.size(); ++si) {
    const ChartSeries& s = chart.series[si];
    const char* colour = kPalette[si % std::size(kPalette)];
    std::string points;
    auto flush = [&] {
      if (!points.empty())
        out << "<polyline class=\"series\" fill=\"none\" stroke=\"" << colour
            << "\" stroke-width=\"2\" points=\"" << points << "\"/>\n";
      points.clear();
    };
    for (size_t i = 0; i < n && i < s.values.size(); ++i) {
      double v = s.values[i];
      if (!std::isfinite(v)) {
        flush();
        continue;
      }
      double x = xpos(i), y = kTop + h - v / top * h;
      points += Num(x) + "," + Num(y) + " ";
      out << "<circle cx=\"" << Num(x) << "\" cy=\"" << Num(y) << "\" r=\"3\" fill=\"" << colour
          << "\"><title>" << XmlEscape(s.name) << " at " << XmlEscape(chart.categories[i]) << ": "
          << XmlEscape(chart.y_bytes ? HumanBytes(v) : Short(v)) << "</title></circle>\n";
    }
    flush();
    LegendEntry(out, kLeft + w + 12, ly, colour, s.name, true);
    ly += 18;
  }
  out << "</svg>\n";
  return out.str();
}

}  // namespace roam::report
