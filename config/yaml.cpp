#include "config/yaml.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace roam::config {
std::string Join(const std::vector<std::string>& keys) {
  std::string out;
  for (size_t i = 0; i < keys.size(); ++i) out += (i ? ", " : "") + keys[i];
  return out;
}

namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string ClosestKey(std::string_view key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(2, key.size() / 2) + 1;
  for (const std::string& c : candidates) {
    const size_t d = EditDistance(key, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

namespace {

std::string Line(const YAML::Node& node) { return std::to_string(node.Mark().line + 1); }

// Walks every mapping once (an alias repeats a node: it is checked where it was defined).
void CheckKeys(const YAML::Node& node, const std::string& source, const std::string& path,
               std::set<std::pair<int, int>>& visited) {
  if (!node.IsMap() && !node.IsSequence()) return;
  if (!visited.emplace(node.Mark().line, node.Mark().column).second) return;
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i)
      CheckKeys(node[i], source, path + "[" + std::to_string(i) + "]", visited);
    return;
  }
  std::map<std::string, std::string> lines;  // key -> line
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    if (!key.IsScalar())
      throw InputError(source + ": " + (path.empty() ? "(top level)" : path) + " (line " +
                       Line(key) + "): a key must be a name, not a " +
                       (key.IsMap()        ? "mapping"
                        : key.IsSequence() ? "list"
                                           : "null"));
    const std::string at = path.empty() ? key.Scalar() : path + "." + key.Scalar();
    if (auto [first, fresh] = lines.emplace(key.Scalar(), Line(key)); !fresh)
      throw InputError(source + ": " + at + ": given twice, at line " + first->second +
                       " and at line " + Line(key) + "; keep one");
    CheckKeys(it->second, source, at, visited);
  }
}

}  // namespace

YAML::Node LoadYaml(std::string_view text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    throw InputError(source + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) +
                     ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  std::set<std::pair<int, int>> visited;
  CheckKeys(root, source, "", visited);
  return root;
}

std::map<std::string, std::string> ApplyOverrides(YAML::Node& root,
                                                  const std::vector<std::string>& overrides) {
  std::map<std::string, std::string> overridden;
  for (const std::string& o : overrides) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError("--set " + o + ": expected KEY=VALUE, e.g. model.batch=4");
    const std::string path = o.substr(0, eq);
    std::vector<std::string> parts;
    std::stringstream ss(path);
    for (std::string part; std::getline(ss, part, '.');) {
      if (part.empty()) throw InputError("--set " + o + ": empty key segment in '" + path + "'");
      parts.push_back(part);
    }
    if (path.back() == '.')
      throw InputError("--set " + o + ": empty key segment in '" + path + "'");
    YAML::Node value = LoadYaml(o.substr(eq + 1), "--set " + o);
    YAML::Node cur = root;
    std::string walked;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      walked += (i ? "." : "") + parts[i];
      YAML::Node next = cur[parts[i]];
      if (!next.IsDefined() || next.IsNull()) {
        cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
        next = cur[parts[i]];
      } else if (!next.IsMap()) {
        throw InputError("--set " + o + ": " + walked + " is a value, not a section");
      }
      cur.reset(next);
    }
    cur[parts.back()] = value;
    overridden[path] = o;
  }
  return overridden;
}

}  // namespace roam::config
