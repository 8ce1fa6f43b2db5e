// YAML reading for configs and sweep files: every message names the source, the key path and,
// for a key that came from the command line, the --set that introduced it (docs/configs.md).
// Used by the section readers of config/ and by batch/'s sweep files; a config's interface is
// config/config.h.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/bytes.h"
#include "core/error.h"

namespace roam::config {

// The one way YAML input is read (configs, sweep files, --set values): parses text and checks
// that every key of every mapping is a plain scalar given once. InputError naming the source,
// the key path and the line(s) otherwise: a syntax error, a duplicate key (both lines), a list
// or mapping used as a key.
YAML::Node LoadYaml(std::string_view text, const std::string& source);

// The closest candidate to a mistyped key by edit distance, or "" when none is close.
std::string ClosestKey(std::string_view key, const std::vector<std::string>& candidates);

// Applies `--set KEY=VALUE` overrides (dotted keys, YAML values) to root, creating sections
// as needed; returns each overridden path with the --set that set it. InputError on a
// malformed override.
std::map<std::string, std::string> ApplyOverrides(YAML::Node& root,
                                                  const std::vector<std::string>& overrides);

// "a, b or c" from a table of {value, name} entries (gen::kFamilyNames, ...).
template <typename Table>
std::string Choices(const Table& table) {
  std::string out;
  const size_t n = std::size(table);
  size_t i = 0;
  for (const auto& entry : table) {
    out += (i ? (i + 1 == n ? " or " : ", ") : "") + std::string(entry.name);
    ++i;
  }
  return out;
}

std::string Join(const std::vector<std::string>& keys);

// Reads one YAML tree, producing messages that name the source, the key path and, for keys
// that came from the command line, the --set that introduced them.
class Reader {
 public:
  Reader(std::string source, std::map<std::string, std::string> overridden)
      : source_(std::move(source)), overridden_(std::move(overridden)) {}

  [[noreturn]] void Fail(const std::string& path, const YAML::Node& node,
                         const std::string& problem) const {
    std::string where = source_ + ": " + path;
    if (auto it = overridden_.find(path); it != overridden_.end())
      where += " (from --set " + it->second + ")";
    else if (node.IsDefined() && node.Mark().line >= 0)
      where += " (line " + std::to_string(node.Mark().line + 1) + ")";
    throw InputError(where + ": " + problem);
  }

  // Checks that every key of a map is allowed; `other` holds keys valid in other contexts, for
  // which `why_not` explains the rejection.
  void CheckKeys(const YAML::Node& map, const std::string& prefix,
                 const std::vector<std::string>& allowed,
                 const std::vector<std::string>& other = {},
                 const std::string& why_not = {}) const {
    for (auto it = map.begin(); it != map.end(); ++it) {
      const std::string key = it->first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
      const std::string path = prefix.empty() ? key : prefix + "." + key;
      if (std::find(other.begin(), other.end(), key) != other.end())
        Fail(path, it->first, why_not + " (valid keys: " + Join(allowed) + ")");
      std::string message = "unknown key";
      if (std::string best = ClosestKey(key, allowed); !best.empty())
        message += "; did you mean " + (prefix.empty() ? best : prefix + "." + best) + "?";
      else
        message += " (valid keys: " + Join(allowed) + ")";
      Fail(path, it->first, message);
    }
  }

  YAML::Node Section(const YAML::Node& root, const std::string& name) const {
    YAML::Node node = root[name];
    if (!node.IsDefined() || node.IsNull()) return YAML::Node(YAML::NodeType::Map);
    if (!node.IsMap()) Fail(name, node, "must be a mapping of keys to values");
    return node;
  }

  std::string Scalar(const YAML::Node& node, const std::string& path, const char* what) const {
    if (!node.IsScalar())
      Fail(path, node,
           std::string("must be ") + what + ", got a " +
               (node.IsMap()        ? "mapping"
                : node.IsSequence() ? "list"
                                    : "null"));
    return node.Scalar();
  }

  // Sizes and counts above kMaxBytes cannot describe a tensor roam can hold; the cap keeps
  // the generator's arithmetic on them (a few small multiples) far from overflow.
  std::int64_t Integer(const YAML::Node& node, const std::string& path, std::int64_t min,
                       std::int64_t max = kMaxBytes) const {
    const std::string text = Scalar(node, path, "an integer");
    std::int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size())
      Fail(path, node, "must be an integer, got '" + text + "'");
    if (value < min)
      Fail(path, node,
           (min == 1 ? "must be positive" : "must be at least " + std::to_string(min)) + ", got " +
               text);
    if (value > max) Fail(path, node, "must be at most " + std::to_string(max) + ", got " + text);
    return value;
  }

  double Number(const YAML::Node& node, const std::string& path) const {
    const std::string text = Scalar(node, path, "a number");
    char* end = nullptr;
    const double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
      Fail(path, node, "must be a number, got '" + text + "'");
    return value;
  }

  double NonNegative(const YAML::Node& node, const std::string& path) const {
    const double d = Number(node, path);
    if (d < 0.0) Fail(path, node, "must not be negative, got " + node.Scalar());
    return d;
  }

  // A nested section (planner.partition, remat.rule): a mapping with only the given keys.
  const YAML::Node& Subsection(const YAML::Node& node, const std::string& path,
                               const std::vector<std::string>& keys) const {
    if (!node.IsMap()) Fail(path, node, "must be a mapping of keys to values");
    CheckKeys(node, path, keys);
    return node;
  }

  bool Bool(const YAML::Node& node, const std::string& path) const {
    const std::string text = Scalar(node, path, "true or false");
    if (text == "true" || text == "True" || text == "yes") return true;
    if (text == "false" || text == "False" || text == "no") return false;
    Fail(path, node, "must be true or false, got '" + text + "'");
  }

  template <typename Table>
  auto Choice(const YAML::Node& node, const std::string& path, const Table& table) const {
    const std::string text = Scalar(node, path, "a name");
    for (const auto& entry : table)
      if (entry.name == text) return entry.value;
    Fail(path, node, "unknown value '" + text + "', expected " + Choices(table));
  }

 private:
  std::string source_;
  std::map<std::string, std::string> overridden_;
};

}  // namespace roam::config
