// The drawing kit the pictures of report/svg.h share (docs/report.md): a palette, number
// formats, text boxes measured with TextWidth, round axis scales, legends, a canvas that keeps
// the boxes of the text it wrote so later labels go clear of it, and the frame and axes of a
// plot. Internal to report/: only its .cpp files include it.
//
// In: sizes in pixels, data maxima, labels. Out: SVG elements written into a Canvas.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report/svg.h"

namespace roam::report {

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

inline const char* Colour(size_t i) { return kPalette[i % std::size(kPalette)]; }
inline const char* Dash(size_t i) {
  return kDashes[(i / std::size(kPalette)) % std::size(kDashes)];
}

inline std::string Num(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", v);
  return text;
}

inline std::string Short(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

inline const char* ClassColour(BufferClass c) {
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
inline Box TextBox(double x, double y, std::string_view text, double size, Anchor anchor) {
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

inline double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw * (1 - 1e-9)) return m * mag;
  return 10 * mag;
}

// A scale from 0 to at least `max` with about `count` steps.
inline Scale MakeScale(double max, bool bytes, int count) {
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

inline double LegendItemWidth(const LegendItem& item) {
  return kSwatch + kSwatchGap + TextWidth(item.name, kFont);
}

// The rows a legend wraps into when it may use `width` pixels.
inline int LegendRows(const std::vector<LegendItem>& items, double width) {
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

inline double YTicksWidth(const Scale& scale) {
  double widest = 0;
  for (double t : scale.Ticks(scale.top)) widest = std::max(widest, TextWidth(scale.Label(t)));
  return widest;
}

// The frame of a picture whose plot area is w x h (fixed_plot) or that is width x height in
// all (the plot area gets what the margins leave).
inline Frame MakeFrame(double width, double height, bool fixed_plot, std::string_view title,
                       const Scale& y, bool y_label, bool x_label,
                       const std::vector<LegendItem>& legend, double right = 16) {
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
inline void YAxis(Canvas& c, const Frame& f, const Scale& y, std::string_view label) {
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

inline void XLabel(Canvas& c, const Frame& f, std::string_view label) {
  if (!label.empty())
    c.Text(f.left + f.w / 2, f.top + f.h + 40, label, Anchor::kMiddle, kFont,
           "class=\"axis-label\"");
}

// Numeric ticks 0 .. steps along x, as many as fit their labels.
inline void StepTicks(Canvas& c, const Frame& f, int steps) {
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
inline void CategoryTicks(Canvas& c, const std::vector<std::string>& categories,
                          const std::function<double(size_t)>& xpos, double spacing, double y) {
  double widest = 0;
  for (const std::string& s : categories) widest = std::max(widest, TextWidth(s));
  const size_t every =
      spacing > 0 ? static_cast<size_t>(std::max(1.0, std::ceil((widest + 8) / spacing))) : 1;
  for (size_t i = 0; i < categories.size(); i += every)
    c.Text(xpos(i), y, categories[i], Anchor::kMiddle, kFont, "class=\"tick\"");
}

}  // namespace roam::report
