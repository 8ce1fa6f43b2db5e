// report.html: one self-contained page with a table and every picture inlined (docs/report.md).
//
// In: a title, a table (header and rows of text) and SVG documents. Out: the HTML text; no
// external scripts, styles or images, so the file can be mailed or archived alone.
#pragma once

#include <string>
#include <vector>

namespace roam::report {

struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

struct Figure {
  std::string caption;
  std::string svg;  // a whole SVG document (as LayoutSvg and friends return)
};

std::string ReportHtml(const std::string& title, const std::vector<std::string>& notes,
                       const Table& table, const std::vector<Figure>& figures);

}  // namespace roam::report
