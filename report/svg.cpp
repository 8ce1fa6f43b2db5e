#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include "core/memory_model.h"
#include "report/canvas.h"

namespace roam::report {

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

double TextWidth(std::string_view text, double font_size) {
  // DejaVu Sans' advance widths of ' ' .. '~', in 1/2048 em.
  static constexpr short kAdvance[95] = {
      651,  821,  942,  1716, 1303, 1946, 1597, 563,  799,  799,  1024, 1716, 651,  739,
      651,  690,  1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 1303, 690,  690,
      1716, 1716, 1716, 1087, 2048, 1401, 1405, 1430, 1577, 1294, 1178, 1587, 1540, 604,
      604,  1343, 1141, 1767, 1532, 1612, 1235, 1612, 1423, 1300, 1251, 1499, 1401, 2025,
      1403, 1251, 1403, 799,  690,  799,  1716, 1024, 1024, 1255, 1300, 1126, 1300, 1260,
      721,  1300, 1298, 569,  569,  1186, 569,  1995, 1298, 1253, 1300, 1300, 842,  1067,
      803,  1298, 1212, 1675, 1212, 1212, 1075, 1303, 690,  1303, 1716};
  double units = 0;
  for (char c : text) {
    const auto ch = static_cast<unsigned char>(c);
    if (ch >= 32 && ch < 127)
      units += kAdvance[ch - 32];
    else if ((ch & 0xC0) != 0x80)  // the first byte of a UTF-8 sequence: one wide character
      units += 2048;
  }
  return units / 2048.0 * font_size * 1.03;
}

std::string LayoutSvg(const Graph& graph, const Plan& plan, const LayoutPlotParams& params,
                      LayoutPlotStats* stats) {
  const int steps = std::max<int>(1, NumSteps(plan.order, plan.steps));
  const Bytes top =
      std::max({plan.summary.actual_peak, params.theoretical_peak, params.lower_bound, Bytes{1}});
  const Scale y =
      MakeScale(static_cast<double>(top), true, std::max(2, std::min(10, params.height / 60)));
  std::vector<LegendItem> legend;
  for (BufferClass c : {BufferClass::kActivation, BufferClass::kGradient,
                        BufferClass::kOptimizerState, BufferClass::kTemporary, BufferClass::kOther})
    legend.push_back({std::string(ToString(c)), ClassColour(c), LegendItem::kBox, "", 1});
  legend.push_back({"arena height (actual peak)", "#555555", LegendItem::kLine, "", 1});
  if (params.theoretical_peak >= 0)
    legend.push_back({"theoretical peak", "black", LegendItem::kLine, "6,3", 1});
  if (params.lower_bound >= 0)
    legend.push_back({"certified bound", "#d62728", LegendItem::kLine, "2,2", 1});
  const std::string title = params.title.empty() ? plan.graph + ": arena layout" : params.title;
  const Frame f = MakeFrame(params.width, params.height, true, title, y, true, true, legend,
                            TextWidth(std::to_string(steps)) / 2 + 8);
  const double w = f.w, h = f.h;
  const double sx = w / steps;
  const double sy = h / y.top;
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
    double bw = (b.end - b.start + 1) * sx;
    double bh = static_cast<double>(b.size) * sy;
    double x0 = f.left + b.start * sx;
    double y0 = f.top + h - static_cast<double>(b.offset + b.size) * sy;
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
    // Cells are counted from the plot area's corner, so the margins do not move them.
    auto key =
        std::make_tuple(static_cast<int>(c), static_cast<long long>((x0 - f.left + bw / 2) / cell),
                        static_cast<long long>((y0 - f.top + bh / 2) / cell));
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

  Canvas out;
  out.Title(title, f.width);
  YAxis(out, f, y, "arena offset");
  StepTicks(out, f, steps);
  XLabel(out, f, "step");
  out.out << body.str();
  auto hline = [&](const char* cls, Bytes value, const std::string& colour, const std::string& dash,
                   const std::string& name) {
    double py = f.top + h - static_cast<double>(value) * sy;
    out.out << "<line class=\"" << cls << "\" x1=\"" << Num(f.left) << "\" x2=\"" << Num(f.left + w)
            << "\" y1=\"" << Num(py) << "\" y2=\"" << Num(py) << "\" stroke=\"" << colour
            << "\" stroke-width=\"1.5\"";
    if (!dash.empty()) out.out << " stroke-dasharray=\"" << dash << "\"";
    out.out << "><title>" << XmlEscape(name) << ": " << value << " B ("
            << XmlEscape(HumanBytes(static_cast<double>(value))) << ")</title></line>\n";
  };
  for (const LegendItem& item : legend) {
    if (item.kind != LegendItem::kLine) continue;
    if (item.name == "theoretical peak")
      hline("peak", params.theoretical_peak, item.colour, item.dash, item.name);
    else if (item.name == "certified bound")
      hline("bound", params.lower_bound, item.colour, item.dash, item.name);
    else
      hline("arena", plan.summary.actual_peak, item.colour, item.dash, item.name);
  }
  out.Legend(legend, f.left, f.legend_y, f.width - f.left - 8);
  char data[160];
  std::snprintf(data, sizeof data,
                " data-rectangles=\"%d\" data-aggregated=\"%d\" data-buffers=\"%d\"",
                counts.rectangles, counts.aggregated_rectangles, counts.buffers);
  if (stats != nullptr) *stats = counts;
  return out.Finish(f.width, f.height, data);
}

std::string MemorySvg(const std::vector<MemorySeries>& series, std::string_view title, int width,
                      int height) {
  size_t steps = 1;
  Bytes top = 1;
  bool totals = false;
  for (const MemorySeries& s : series) {
    steps = std::max(steps, s.bytes.size());
    for (Bytes b : s.bytes) top = std::max(top, b);
    top = std::max(top, s.total_peak);
    totals = totals || s.total_peak >= 0;
  }
  const Scale y = MakeScale(static_cast<double>(top) * 1.04, true, std::max(2, height / 80));
  std::vector<LegendItem> legend;
  for (size_t i = 0; i < series.size(); ++i)
    legend.push_back({series[i].name, Colour(i), LegendItem::kDot, Dash(i), 1});
  if (totals)
    legend.push_back({"dashed: total peak (persistent + arena, fragmentation included)", "#555555",
                      LegendItem::kLine, "8,4", 1});
  const Frame f = MakeFrame(width, height, false, title, y, true, true, legend,
                            TextWidth(std::to_string(steps)) / 2 + 8);
  const double w = f.w, h = f.h;
  const double sx = w / static_cast<double>(std::max<size_t>(1, steps - 1));
  const double sy = h / y.top;
  Canvas out;
  out.Title(title, f.width);
  YAxis(out, f, y, "memory in use");
  StepTicks(out, f, static_cast<int>(steps - 1));
  XLabel(out, f, "step");
  auto ypos = [&](Bytes b) { return f.top + h - static_cast<double>(b) * sy; };
  for (size_t i = 0; i < series.size(); ++i) {
    const MemorySeries& s = series[i];
    if (s.bytes.empty()) continue;
    out.out << "<polyline class=\"series\" fill=\"none\" stroke=\"" << Colour(i)
            << "\" stroke-width=\"1.5\"";
    if (*Dash(i)) out.out << " stroke-dasharray=\"" << Dash(i) << "\"";
    out.out << " points=\"";
    auto point = [&](size_t k) {
      out.out << Num(f.left + static_cast<double>(k) * sx) << "," << Num(ypos(s.bytes[k])) << " ";
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
    out.out << "\"><title>" << XmlEscape(s.name) << "</title></polyline>\n";
    if (s.total_peak >= 0)
      out.out << "<line class=\"total-peak\" x1=\"" << Num(f.left) << "\" x2=\"" << Num(f.left + w)
              << "\" y1=\"" << Num(ypos(s.total_peak)) << "\" y2=\"" << Num(ypos(s.total_peak))
              << "\" stroke=\"" << Colour(i)
              << "\" stroke-width=\"1.2\" stroke-dasharray=\"8,4\"><title>" << XmlEscape(s.name)
              << " total peak " << s.total_peak << " B</title></line>\n";
  }
  // Labels last, the total peaks first (they are the table's numbers), each at the first free
  // place: a total peak along its line, a peak in use around its dot, inside the plot area.
  const Box plot = f.Plot();
  for (size_t i = 0; i < series.size(); ++i) {
    const MemorySeries& s = series[i];
    if (s.total_peak < 0) continue;
    const double py = ypos(s.total_peak);
    std::vector<std::pair<double, double>> at;
    for (double fx : {1.0, 0.8, 0.6, 0.4, 0.2})
      for (double dy : {-4.0, 14.0}) at.emplace_back(f.left + fx * w - 4, py + dy);
    std::string text = s.name + " total " + HumanBytes(static_cast<double>(s.total_peak));
    std::string attrs =
        std::string("class=\"total-peak-label\" fill=\"") + Colour(i) + "\"" + kHalo;
    out.Place(at, plot, text, Anchor::kEnd, attrs);
  }
  for (size_t i = 0; i < series.size(); ++i) {
    const MemorySeries& s = series[i];
    if (s.bytes.empty()) continue;
    auto peak = std::max_element(s.bytes.begin(), s.bytes.end());
    size_t k = static_cast<size_t>(peak - s.bytes.begin());
    double px = f.left + static_cast<double>(k) * sx;
    double py = ypos(*peak);
    out.out << "<circle class=\"peak\" cx=\"" << Num(px) << "\" cy=\"" << Num(py)
            << "\" r=\"4\" fill=\"" << Colour(i) << "\"><title>" << XmlEscape(s.name) << " peak "
            << *peak << " B at step " << k << "</title></circle>\n";
    out.Reserve({px - 4, py - 4, px + 4, py + 4});
    std::string text = HumanBytes(static_cast<double>(*peak)) + " @ " + std::to_string(k);
    std::string attrs = std::string("class=\"peak-label\" fill=\"") + Colour(i) + "\"" + kHalo;
    const double tw = TextWidth(text);
    std::vector<std::pair<double, double>> at;
    for (double dy : {-7.0, 17.0, -21.0, 31.0, -35.0, 45.0, -49.0, 59.0})
      for (double dx : {6.0, -6.0 - tw, -tw / 2}) at.emplace_back(px + dx, py + dy);
    out.Place(at, plot, text, Anchor::kStart, attrs);
  }
  out.Legend(legend, f.left, f.legend_y, f.width - f.left - 8);
  return out.Finish(f.width, f.height);
}

std::string LineChartSvg(const LineChart& chart, int width, int height) {
  double top = 0;
  for (const ChartSeries& s : chart.series)
    for (double v : s.values)
      if (std::isfinite(v)) top = std::max(top, v);
  const Scale y = MakeScale(top > 0 ? top * 1.04 : 1.0, chart.y_bytes, std::max(2, height / 80));
  std::vector<LegendItem> legend;
  for (size_t i = 0; i < chart.series.size(); ++i)
    legend.push_back({chart.series[i].name, Colour(i), LegendItem::kDot, Dash(i), 1});
  const Frame f = MakeFrame(width, height, false, chart.title, y, !chart.y_label.empty(),
                            !chart.x_label.empty(), legend);
  const size_t n = chart.categories.size();
  const double spacing = f.w / static_cast<double>(std::max<size_t>(1, n));
  auto xpos = [&](size_t i) { return f.left + (static_cast<double>(i) + 0.5) * spacing; };
  Canvas out;
  out.Title(chart.title, f.width);
  YAxis(out, f, y, chart.y_label);
  XLabel(out, f, chart.x_label);
  CategoryTicks(out, chart.categories, xpos, spacing, f.top + f.h + 18);
  for (size_t si = 0; si < chart.series.size(); ++si) {
    const ChartSeries& s = chart.series[si];
    std::string points;
    auto flush = [&] {
      if (!points.empty()) {
        out.out << "<polyline class=\"series\" fill=\"none\" stroke=\"" << Colour(si)
                << "\" stroke-width=\"2\"";
        if (*Dash(si)) out.out << " stroke-dasharray=\"" << Dash(si) << "\"";
        out.out << " points=\"" << points << "\"/>\n";
      }
      points.clear();
    };
    for (size_t i = 0; i < n && i < s.values.size(); ++i) {
      double v = s.values[i];
      if (!std::isfinite(v)) {
        flush();
        continue;
      }
      double x = xpos(i), py = f.top + f.h - v / y.top * f.h;
      points += Num(x) + "," + Num(py) + " ";
      out.out << "<circle cx=\"" << Num(x) << "\" cy=\"" << Num(py) << "\" r=\"3\" fill=\""
              << Colour(si) << "\"><title>" << XmlEscape(s.name) << " at "
              << XmlEscape(chart.categories[i]) << ": "
              << XmlEscape(chart.y_bytes ? HumanBytes(v) : Short(v)) << "</title></circle>\n";
    }
    flush();
  }
  out.Legend(legend, f.left, f.legend_y, f.width - f.left - 8);
  return out.Finish(f.width, f.height);
}

std::string BarChartSvg(const BarChart& chart, int max_width) {
  const size_t n = std::max<size_t>(1, chart.categories.size());
  const size_t m = std::max<size_t>(1, chart.methods.size());
  constexpr double kBar = 12, kPlotH = 170;
  double widest = 0;
  for (const std::string& c : chart.categories) widest = std::max(widest, TextWidth(c));
  // Every category label fits under its group of bars.
  const double plot_w = std::max(
      160.0, static_cast<double>(n) * std::max(static_cast<double>(m) * kBar + 10, widest + 10));
  const double group = plot_w / static_cast<double>(n);
  std::vector<Scale> scales;
  double ticks_w = 0;
  for (const BarPanel& p : chart.panels) {
    double top = 0;
    for (const auto& row : p.values)
      for (double v : row)
        if (std::isfinite(v)) top = std::max(top, v);
    scales.push_back(MakeScale(top > 0 ? top * 1.04 : 1.0, chart.y_bytes, 4));
    ticks_w = std::max(ticks_w, YTicksWidth(scales.back()));
  }
  const double y_label_w = chart.y_label.empty() ? 0 : 22;
  const double panel_left = 8 + y_label_w + ticks_w + 8;
  const double panel_w = panel_left + plot_w + 16;
  const double panel_h = 28 + kPlotH + 24 + (chart.x_label.empty() ? 0 : 20) + 16;
  const size_t panels = std::max<size_t>(1, chart.panels.size());
  const size_t columns =
      std::clamp<size_t>(static_cast<size_t>(std::max(1.0, (max_width - 10) / panel_w)), 1, panels);
  const size_t rows = (panels + columns - 1) / columns;
  std::vector<LegendItem> legend;
  for (size_t k = 0; k < chart.methods.size(); ++k)
    legend.push_back({chart.methods[k], Colour(k), LegendItem::kBox, "", 1});
  double width = std::max(10 + static_cast<double>(columns) * panel_w,
                          TextWidth(chart.title, kTitleFont) + 20);
  const double legend_top = chart.title.empty() ? 8 : 34;
  const double legend_h = LegendRows(legend, width - 20) * kLegendRow;
  const double panels_top = legend_top + legend_h + 8;
  const double height = panels_top + static_cast<double>(rows) * panel_h + 4;

  Canvas out;
  out.Title(chart.title, width);
  out.Legend(legend, 10, legend_top, width - 20);
  for (size_t pi = 0; pi < chart.panels.size(); ++pi) {
    const BarPanel& p = chart.panels[pi];
    const Scale& y = scales[pi];
    const double ox = 10 + static_cast<double>(pi % columns) * panel_w;
    const double oy = panels_top + static_cast<double>(pi / columns) * panel_h;
    Frame f;
    f.left = ox + panel_left;
    f.top = oy + 28;
    f.w = plot_w;
    f.h = kPlotH;
    // The panel's name, shortened to its width (the whole name in its hover title).
    std::string name = p.name;
    const double room = panel_w - 16;
    if (TextWidth(name, kPanelFont) > room) {
      while (!name.empty() && TextWidth(name + "\u2026", kPanelFont) > room) {
        name.pop_back();
        while (!name.empty() && (static_cast<unsigned char>(name.back()) & 0xC0) == 0x80)
          name.pop_back();
        if (!name.empty() && (static_cast<unsigned char>(name.back()) & 0xC0) == 0xC0)
          name.pop_back();
      }
      name += "\u2026";
    }
    out.out << "<g class=\"panel-title\"><title>" << XmlEscape(p.name) << "</title>\n";
    out.Text(ox + panel_w / 2, oy + 15, name, Anchor::kMiddle, kPanelFont);
    out.out << "</g>\n";
    for (double t : y.Ticks(y.top)) {
      double py = f.top + f.h - t / y.top * f.h;
      out.out << "<line class=\"grid\" x1=\"" << Num(f.left) << "\" x2=\"" << Num(f.left + f.w)
              << "\" y1=\"" << Num(py) << "\" y2=\"" << Num(py) << "\" stroke=\"#e6e6e6\"/>\n";
      out.Text(f.left - 6, py + 4, y.Label(t), Anchor::kEnd, kFont, "class=\"tick\"");
    }
    out.out << "<path d=\"M" << Num(f.left) << "," << Num(f.top) << "V" << Num(f.top + f.h) << "H"
            << Num(f.left + f.w) << "\" fill=\"none\" stroke=\"black\"/>\n";
    if (!chart.y_label.empty()) {
      const double x = ox + 20, cy = f.top + f.h / 2;
      out.Reserve({x - kAscent * kFont, cy - TextWidth(chart.y_label) / 2, x + kDescent * kFont,
                   cy + TextWidth(chart.y_label) / 2});
      out.out << "<text class=\"axis-label\" transform=\"translate(" << Num(x) << "," << Num(cy)
              << ") rotate(-90)\" text-anchor=\"middle\">" << XmlEscape(chart.y_label)
              << "</text>\n";
    }
    auto xpos = [&](size_t i) { return f.left + (static_cast<double>(i) + 0.5) * group; };
    CategoryTicks(out, chart.categories, xpos, group, f.top + f.h + 18);
    XLabel(out, f, chart.x_label);
    for (size_t k = 0; k < p.values.size() && k < chart.methods.size(); ++k)
      for (size_t i = 0; i < p.values[k].size() && i < chart.categories.size(); ++i) {
        double v = p.values[k][i];
        if (!std::isfinite(v)) continue;
        double bh = std::max(0.0, v / y.top * f.h);
        double x = xpos(i) - static_cast<double>(m) * kBar / 2 + static_cast<double>(k) * kBar;
        out.out << "<rect class=\"bar\" x=\"" << Num(x + 1) << "\" y=\"" << Num(f.top + f.h - bh)
                << "\" width=\"" << Num(kBar - 2) << "\" height=\"" << Num(bh) << "\" fill=\""
                << Colour(k) << "\"><title>" << XmlEscape(p.name) << ", "
                << XmlEscape(chart.methods[k]) << " at " << XmlEscape(chart.categories[i]) << ": "
                << XmlEscape(chart.y_bytes ? HumanBytes(v) : Short(v)) << "</title></rect>\n";
      }
  }
  return out.Finish(width, height);
}

}  // namespace roam::report
