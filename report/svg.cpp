#include "report/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include "core/memory_model.h"

namespace roam::report {
namespace {

constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
// Series beyond the palette's ten colours are told apart by their dash pattern as well.
constexpr const char* kDashes[] = {"", "7,3", "2,2", "9,3,2,3"};
constexpr double kFont = 12, kTitleFont = 15, kPanelFont = 13;
// DejaVu Sans' ascent and descent, in em: the box a browser gives a line of text.
constexpr double kAscent = 0.93, kDescent = 0.24;
constexpr double kLegendRow = 18;
// Labels drawn over lines keep a white outline, so a line under them does not cross them out.
constexpr const char* kHalo = " stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\"";

const char* Colour(size_t i) { return kPalette[i % std::size(kPalette)]; }
const char* Dash(size_t i) { return kDashes[(i / std::size(kPalette)) % std::size(kDashes)]; }

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

struct Box {
  double x0, y0, x1, y1;
  bool Inside(const Box& outer) const {
    return x0 >= outer.x0 - 0.01 && y0 >= outer.y0 - 0.01 && x1 <= outer.x1 + 0.01 &&
           y1 <= outer.y1 + 0.01;
  }
  double Overlap(const Box& o) const {
    double w = std::min(x1, o.x1) - std::max(x0, o.x0);
    double h = std::min(y1, o.y1) - std::max(y0, o.y0);
    return w > 0 && h > 0 ? w * h : 0.0;
  }
};

enum class Anchor { kStart, kMiddle, kEnd };

// The box of a line of text whose anchor point (its baseline) is (x, y).
Box TextBox(double x, double y, std::string_view text, double size, Anchor anchor) {
  double w = TextWidth(text, size);
  double x0 = anchor == Anchor::kStart ? x : anchor == Anchor::kMiddle ? x - w / 2 : x - w;
  return {x0, y - kAscent * size, x0 + w, y + kDescent * size};
}

// Round tick values for an axis from 0: a 1-2-5 step of the unit the labels are written in
// (for bytes, the largest binary unit the maximum reaches), so every label is a round number.
struct Scale {
  double top = 1;   // the axis maximum, a tick, in data units
  double step = 1;  // in data units
  double unit = 1;  // data units per displayed unit
  std::string unit_name;
  int decimals = 0;

  std::string Label(double v) const {
    char text[48];
    std::snprintf(text, sizeof text, "%.*f", decimals, v / unit);
    std::string s = text;
    // 0.5, 1, 1.5 rather than 0.5, 1.0, 1.5: fewer digits, the same round values.
    if (s.find('.') != std::string::npos) {
      s.erase(s.find_last_not_of('0') + 1);
      if (s.back() == '.') s.pop_back();
    }
    if (s == "-0") s = "0";
    return unit_name.empty() ? s : s + " " + unit_name;
  }
  std::vector<double> Ticks(double limit) const {
    std::vector<double> ticks;
    for (int i = 0; i * step <= limit * (1 + 1e-9); ++i) ticks.push_back(i * step);
    return ticks;
  }
};

double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}

// A scale from 0 to at least `max` with about `count` steps.
Scale MakeScale(double max, bool bytes, int count) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  Scale s;
  if (!(max > 0) || !std::isfinite(max)) max = 1;
  if (bytes) {
    size_t u = 0;
    while (u + 1 < std::size(kUnits) && max >= std::pow(1024.0, static_cast<double>(u + 1))) ++u;
    s.unit = std::pow(1024.0, static_cast<double>(u));
    s.unit_name = kUnits[u];
  }
  double m = max / s.unit;
  double step = NiceStep(m / std::max(1, count));
  if (bytes && s.unit == 1) step = std::max(1.0, step);
  s.decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
  double top = std::ceil(m / step - 1e-9) * step;
  s.step = step * s.unit;
  s.top = std::max(top, step) * s.unit;
  return s;
}

struct LegendItem {
  enum Kind { kBox, kLine, kDot };
  std::string name;
  std::string colour;
  Kind kind = kBox;
  std::string dash;  // for lines
  double opacity = 1;
};

constexpr double kSwatch = 16, kSwatchGap = 5, kItemGap = 18;

double LegendItemWidth(const LegendItem& item) {
  return kSwatch + kSwatchGap + TextWidth(item.name, kFont);
}

// The rows a legend wraps into when it may use `width` pixels.
int LegendRows(const std::vector<LegendItem>& items, double width) {
  if (items.empty()) return 0;
  int rows = 1;
  double x = 0;
  for (const LegendItem& item : items) {
    double w = LegendItemWidth(item);
    if (x > 0 && x + w > width) {
      ++rows;
      x = 0;
    }
    x += w + kItemGap;
  }
  return rows;
}

// An SVG document under construction: every text written through it is measured and its box
// kept, so later labels can be placed clear of it.
class Canvas {
 public:
  std::ostringstream out;

  void Text(double x, double y, std::string_view text, Anchor anchor = Anchor::kStart,
            double size = kFont, std::string_view attrs = {}) {
    boxes_.push_back(TextBox(x, y, text, size, anchor));
    WriteText(x, y, text, anchor, size, attrs);
  }

  // The text at the first candidate anchor point whose box lies inside `within` and clear of
  // every text so far; where none is, the one that overlaps least.
  void Place(const std::vector<std::pair<double, double>>& candidates, const Box& within,
             std::string_view text, Anchor anchor, std::string_view attrs = {}) {
    size_t best = 0;
    double best_cost = 1e300;
    for (size_t i = 0; i < candidates.size(); ++i) {
      Box b = TextBox(candidates[i].first, candidates[i].second, text, kFont, anchor);
      double cost = 0;
      for (const Box& o : boxes_) cost += o.Overlap(b);
      if (!b.Inside(within)) cost += 1e6 + b.x1 - b.x0;
      if (cost < best_cost) best = i, best_cost = cost;
      if (cost == 0) break;
    }
    Text(candidates[best].first, candidates[best].second, text, anchor, kFont, attrs);
  }

  void Reserve(const Box& b) { boxes_.push_back(b); }

  void Title(std::string_view title, double width) {
    if (!title.empty()) Text(width / 2, 22, title, Anchor::kMiddle, kTitleFont);
  }

  // The items in rows from (x, y) (the first row's top) within `width` pixels.
  void Legend(const std::vector<LegendItem>& items, double x, double y, double width) {
    double cx = x, cy = y + 13;
    for (const LegendItem& item : items) {
      double w = LegendItemWidth(item);
      if (cx > x && cx + w > x + width) {
        cx = x;
        cy += kLegendRow;
      }
      switch (item.kind) {
        case LegendItem::kBox:
          out << "<rect class=\"legend\" x=\"" << Num(cx + 2) << "\" y=\"" << Num(cy - 10)
              << "\" width=\"12\" height=\"12\" fill=\"" << item.colour << "\"";
          if (item.opacity < 1) out << " fill-opacity=\"" << item.opacity << "\"";
          out << "/>\n";
          break;
        case LegendItem::kLine:
        case LegendItem::kDot:
          out << "<line class=\"legend\" x1=\"" << Num(cx) << "\" x2=\"" << Num(cx + kSwatch)
              << "\" y1=\"" << Num(cy - 4) << "\" y2=\"" << Num(cy - 4) << "\" stroke=\""
              << item.colour << "\" stroke-width=\"2\"";
          if (!item.dash.empty()) out << " stroke-dasharray=\"" << item.dash << "\"";
          out << "/>\n";
          if (item.kind == LegendItem::kDot)
            out << "<circle class=\"legend\" cx=\"" << Num(cx + kSwatch / 2) << "\" cy=\""
                << Num(cy - 4) << "\" r=\"3\" fill=\"" << item.colour << "\"/>\n";
          break;
      }
      Text(cx + kSwatch + kSwatchGap, cy, item.name, Anchor::kStart, kFont, "class=\"legend\"");
      cx += w + kItemGap;
    }
  }

  std::string Finish(double width, double height, std::string_view extra = {}) const {
    std::ostringstream doc;
    const long long w = std::llround(std::ceil(width)), h = std::llround(std::ceil(height));
    doc << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w << "\" height=\"" << h
        << "\" viewBox=\"0 0 " << w << " " << h << "\" style=\"max-width:100%;height:auto\""
        << " font-family=\"DejaVu Sans, sans-serif\" font-size=\"" << kFont << "\"" << extra
        << ">\n"
        << "<rect class=\"background\" x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h
        << "\" fill=\"white\"/>\n"
        << out.str() << "</svg>\n";
    return doc.str();
  }

 private:
  void WriteText(double x, double y, std::string_view text, Anchor anchor, double size,
                 std::string_view attrs) {
    out << "<text x=\"" << Num(x) << "\" y=\"" << Num(y) << "\"";
    if (anchor == Anchor::kMiddle) out << " text-anchor=\"middle\"";
    if (anchor == Anchor::kEnd) out << " text-anchor=\"end\"";
    if (size != kFont) out << " font-size=\"" << size << "\"";
    if (!attrs.empty()) out << " " << attrs;
    out << ">" << XmlEscape(text) << "</text>\n";
  }

  std::vector<Box> boxes_;
};

// A plot area and the margins around it: y tick labels and the y label on the left, the title
// above, x tick labels, the x label and the legend below.
struct Frame {
  double left = 0, top = 0, w = 0, h = 0;
  double width = 0, height = 0;  // the whole picture
  double legend_y = 0;
  Box Plot() const { return {left, top, left + w, top + h}; }
};

double YTicksWidth(const Scale& scale) {
  double widest = 0;
  for (double t : scale.Ticks(scale.top)) widest = std::max(widest, TextWidth(scale.Label(t)));
  return widest;
}

// The frame of a picture whose plot area is w x h (fixed_plot) or that is width x height in
// all (the plot area gets what the margins leave).
Frame MakeFrame(double width, double height, bool fixed_plot, std::string_view title,
                const Scale& y, bool y_label, bool x_label, const std::vector<LegendItem>& legend,
                double right = 16) {
  Frame f;
  f.left = 8 + (y_label ? 22 : 0) + YTicksWidth(y) + 8;
  f.top = title.empty() ? 14 : 40;
  const double below = 24 + (x_label ? 20 : 0);
  if (fixed_plot) {
    f.w = width;
    f.h = height;
    f.width = f.left + f.w + right;
  } else {
    f.width = width;
    f.w = f.width - f.left - right;
  }
  f.width = std::max(f.width, TextWidth(title, kTitleFont) + 20);
  for (const LegendItem& item : legend)
    f.width = std::max(f.width, f.left + LegendItemWidth(item) + 8);
  const double legend_h = LegendRows(legend, f.width - f.left) * kLegendRow;
  if (fixed_plot) {
    f.height = f.top + f.h + below + legend_h + 10;
  } else {
    f.height = height;
    f.h = std::max(60.0, f.height - f.top - below - legend_h - 10);
    f.height = f.top + f.h + below + legend_h + 10;
  }
  f.legend_y = f.top + f.h + below + 2;
  return f;
}

// Grid lines, tick labels and the axes of a plot area; the y label rotated on the left.
void YAxis(Canvas& c, const Frame& f, const Scale& y, std::string_view label) {
  for (double t : y.Ticks(y.top)) {
    double py = f.top + f.h - t / y.top * f.h;
    c.out << "<line class=\"grid\" x1=\"" << Num(f.left) << "\" x2=\"" << Num(f.left + f.w)
          << "\" y1=\"" << Num(py) << "\" y2=\"" << Num(py) << "\" stroke=\"#e6e6e6\"/>\n";
    c.Text(f.left - 6, py + 4, y.Label(t), Anchor::kEnd, kFont, "class=\"tick\"");
  }
  c.out << "<line x1=\"" << Num(f.left) << "\" x2=\"" << Num(f.left) << "\" y1=\"" << Num(f.top)
        << "\" y2=\"" << Num(f.top + f.h) << "\" stroke=\"black\"/>\n";
  c.out << "<line x1=\"" << Num(f.left) << "\" x2=\"" << Num(f.left + f.w) << "\" y1=\""
        << Num(f.top + f.h) << "\" y2=\"" << Num(f.top + f.h) << "\" stroke=\"black\"/>\n";
  if (!label.empty()) {
    // Rotated a quarter turn: its box is the text's box turned about the anchor point.
    const double x = 20, cy = f.top + f.h / 2, tw = TextWidth(label);
    c.Reserve({x - kAscent * kFont, cy - tw / 2, x + kDescent * kFont, cy + tw / 2});
    c.out << "<text class=\"axis-label\" transform=\"translate(" << x << "," << Num(cy)
          << ") rotate(-90)\" text-anchor=\"middle\">" << XmlEscape(label) << "</text>\n";
  }
}

void XLabel(Canvas& c, const Frame& f, std::string_view label) {
  if (!label.empty())
    c.Text(f.left + f.w / 2, f.top + f.h + 40, label, Anchor::kMiddle, kFont,
           "class=\"axis-label\"");
}

// Numeric ticks 0 .. steps along x, as many as fit their labels.
void StepTicks(Canvas& c, const Frame& f, int steps) {
  steps = std::max(steps, 1);
  const double label_w = TextWidth(std::to_string(steps)) + 24;
  Scale x = MakeScale(steps, false, std::max(1, static_cast<int>(f.w / label_w)));
  x.step = std::max(1.0, x.step);
  for (double t : x.Ticks(steps)) {
    double px = f.left + t / steps * f.w;
    c.out << "<line x1=\"" << Num(px) << "\" x2=\"" << Num(px) << "\" y1=\"" << Num(f.top + f.h)
          << "\" y2=\"" << Num(f.top + f.h + 5) << "\" stroke=\"black\"/>\n";
    c.Text(px, f.top + f.h + 18, std::to_string(static_cast<long long>(t)), Anchor::kMiddle, kFont,
           "class=\"tick\"");
  }
}

// Category labels centred at xpos(i), every k-th one where they would not fit side by side.
void CategoryTicks(Canvas& c, const std::vector<std::string>& categories,
                   const std::function<double(size_t)>& xpos, double spacing, double y) {
  double widest = 0;
  for (const std::string& s : categories) widest = std::max(widest, TextWidth(s));
  const size_t every =
      spacing > 0 ? static_cast<size_t>(std::max(1.0, std::ceil((widest + 8) / spacing))) : 1;
  for (size_t i = 0; i < categories.size(); i += every)
    c.Text(xpos(i), y, categories[i], Anchor::kMiddle, kFont, "class=\"tick\"");
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
