#include "config/fields.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <stdexcept>

#include "config/field_makers.h"

namespace roam::config {

std::string FormatNumber(double value) {
  char text[32];
  // Whole numbers as integers ("600", not "6e+02"), as a person writes them in a config.
  if (value == std::floor(value) && std::fabs(value) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
  }
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(text, sizeof text, "%.*g", precision, value);
    if (std::strtod(text, nullptr) == value) break;
  }
  return text;
}

namespace detail {

std::string List(std::span<const std::string_view> names) {
  std::string list;
  for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  return list;
}

std::string OneOf(const Reader& r, const YAML::Node& v, const std::string& path,
                  std::span<const std::string_view> names, const char* what) {
  const std::string text = r.Scalar(v, path, what);
  if (std::find(names.begin(), names.end(), text) == names.end())
    r.Fail(path, v, "must be one of " + List(names) + ", got " + text);
  return text;
}

void InsertAfter(std::vector<Field>& fields, const std::string& prefix, std::vector<Field> more) {
  auto last = fields.end();
  for (auto it = fields.begin(); it != fields.end(); ++it)
    if (it->key.rfind(prefix, 0) == 0) last = it;
  if (last == fields.end()) throw std::logic_error("no field under " + prefix);
  fields.insert(last + 1, std::make_move_iterator(more.begin()),
                std::make_move_iterator(more.end()));
}

}  // namespace detail

namespace {

// The keys directly under prefix that lead to a field, in the fields' order.
std::vector<std::string> ChildKeys(const std::vector<Field>& fields, const std::string& prefix) {
  std::vector<std::string> keys;
  for (const Field& f : fields) {
    if (f.key.size() <= prefix.size() + 1 || f.key.compare(0, prefix.size(), prefix) != 0 ||
        f.key[prefix.size()] != '.')
      continue;
    const std::string rest = f.key.substr(prefix.size() + 1);
    const std::string child = rest.substr(0, rest.find('.'));
    if (std::find(keys.begin(), keys.end(), child) == keys.end()) keys.push_back(child);
  }
  return keys;
}

void ReadMapping(const Reader& r, const YAML::Node& node, const std::string& prefix,
                 const std::vector<Field>& fields,
                 const std::vector<std::pair<std::string, std::string>>& moved, Planning& out) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string path = prefix + "." + it->first.Scalar();
    for (const auto& [old_key, now] : moved)
      if (old_key == path) r.Fail(path, it->second, "has moved to " + now);
  }
  r.CheckKeys(node, prefix, ChildKeys(fields, prefix));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string path = prefix + "." + it->first.Scalar();
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    auto field =
        std::find_if(fields.begin(), fields.end(), [&](const Field& f) { return f.key == path; });
    if (field != fields.end()) {
      field->read(r, v, path, out);
      continue;
    }
    if (!v.IsMap()) r.Fail(path, v, "must be a mapping of keys to values");
    ReadMapping(r, v, path, fields, moved, out);
  }
}

}  // namespace

void ReadSection(const Reader& r, const YAML::Node& node, const std::string& name,
                 const std::vector<Field>& fields,
                 const std::vector<std::pair<std::string, std::string>>& moved, Planning& out) {
  ReadMapping(r, node, name, fields, moved, out);
}

}  // namespace roam::config
