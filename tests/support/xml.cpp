#include "tests/support/xml.h"

#include <vector>

namespace roam::testing {

// Well-formedness of the XML we write: every element closed in order, no stray '&' or '<'.
std::string XmlProblem(const std::string& svg) {
  std::vector<std::string> open;
  for (size_t i = 0; i < svg.size(); ++i) {
    if (svg[i] == '&') {
      size_t semi = svg.find(';', i);
      std::string entity = svg.substr(i, semi == std::string::npos ? 0 : semi - i + 1);
      if (entity != "&amp;" && entity != "&lt;" && entity != "&gt;" && entity != "&quot;" &&
          entity != "&apos;")
        return "bad entity at " + std::to_string(i);
      continue;
    }
    if (svg[i] != '<') continue;
    size_t end = svg.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    std::string tag = svg.substr(i + 1, end - i - 1);
    if (tag.find('<') != std::string::npos) return "'<' inside a tag at " + std::to_string(i);
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "mismatched </" + tag.substr(1);
      open.pop_back();
    } else if (tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n")));
    }
    i = end;
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

}  // namespace roam::testing
