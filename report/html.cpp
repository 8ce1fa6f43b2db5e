#include "report/html.h"

#include <sstream>

#include "report/svg.h"

namespace roam::report {

std::string ReportHtml(const std::string& title, const std::vector<std::string>& notes,
                       const Table& table, const std::vector<Figure>& figures) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
      << XmlEscape(title) << "</title>\n<style>\n"
      << "body{font-family:sans-serif;margin:24px;color:#222}\n"
      << "table{border-collapse:collapse;font-size:12px}\n"
      << "th,td{border:1px solid #bbb;padding:3px 6px;text-align:right;white-space:nowrap}\n"
      << "th{background:#eef2f7;position:sticky;top:0}\n"
      << "td.text{text-align:left}\ntr.failed td{background:#fde8e8}\n"
      << ".scroll{overflow-x:auto;max-width:100%}\nfigure{margin:24px 0}\n"
      << "figcaption{font-weight:bold;margin-bottom:6px}\n"
      // Pictures keep their aspect ratio and shrink to the page's width.
      << "figure svg{display:block;max-width:100%;height:auto}\n"
      << "</style>\n</head>\n<body>\n<h1>" << XmlEscape(title) << "</h1>\n";
  for (const std::string& n : notes) out << "<p>" << XmlEscape(n) << "</p>\n";
  out << "<div class=\"scroll\"><table id=\"summary\">\n<thead><tr>";
  for (const std::string& h : table.header) out << "<th>" << XmlEscape(h) << "</th>";
  out << "</tr></thead>\n<tbody>\n";
  for (const auto& row : table.rows) {
    bool failed = false;
    for (const std::string& cell : row) failed = failed || cell == "failed";
    out << (failed ? "<tr class=\"failed\">" : "<tr>");
    for (const std::string& cell : row) {
      bool numeric =
          !cell.empty() && cell.find_first_not_of("0123456789.-+eE%") == std::string::npos;
      out << (numeric ? "<td>" : "<td class=\"text\">") << XmlEscape(cell) << "</td>";
    }
    out << "</tr>\n";
  }
  out << "</tbody>\n</table></div>\n";
  for (const Figure& f : figures) {
    // The XML declaration is not allowed inside HTML; the SVGs we write have none.
    out << "<figure>\n<figcaption>" << XmlEscape(f.caption) << "</figcaption>\n"
        << f.svg << "</figure>\n";
  }
  out << "</body>\n</html>\n";
  return out.str();
}

}  // namespace roam::report
