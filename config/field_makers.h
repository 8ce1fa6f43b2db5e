// The makers of field descriptions (config/fields.h), shared by the planner's and remat's
// tables: each ties a key to a member through an accessor `[](auto& p) -> auto& { ... }`
// (one lambda serves reading and printing) and reads it with its bounds.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "config/fields.h"
#include "core/bytes.h"
#include "layout/layout.h"

namespace roam::config::detail {

std::string List(std::span<const std::string_view> names);
std::string OneOf(const Reader& r, const YAML::Node& v, const std::string& path,
                  std::span<const std::string_view> names, const char* what);

template <typename Get>
using MemberOf = std::remove_cvref_t<decltype(std::declval<Get>()(std::declval<Planning&>()))>;

template <typename Get>
Field Flag(std::string key, std::string doc, Get get) {
  return {std::move(key), std::move(doc),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, Planning& p) {
            get(p) = r.Bool(v, path);
          },
          [=](const Planning& p) { return std::string(get(p) ? "true" : "false"); }};
}

// An integer member in [min, max].
template <typename Get>
Field Int(std::string key, std::int64_t min, std::int64_t max, std::string doc, Get get) {
  using T = MemberOf<Get>;
  return {std::move(key), std::move(doc),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, Planning& p) {
            get(p) = static_cast<T>(r.Integer(v, path, min, max));
          },
          [=](const Planning& p) { return std::to_string(get(p)); }};
}
inline constexpr std::int64_t kMaxInt = std::numeric_limits<int>::max();

// A number in [min, max]; [0, inf) reads as "must not be negative".
inline double NumberIn(const Reader& r, const YAML::Node& v, const std::string& path, double min,
                       double max) {
  if (min == 0.0 && max == std::numeric_limits<double>::infinity()) return r.NonNegative(v, path);
  const double x = r.Number(v, path);
  if (x < min || x > max)
    r.Fail(path, v,
           "must be in [" + FormatNumber(min) + ", " + FormatNumber(max) + "], got " + v.Scalar());
  return x;
}

template <typename Get>
Field Number(std::string key, double min, double max, std::string doc, Get get) {
  return {std::move(key), std::move(doc),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, Planning& p) {
            get(p) = NumberIn(r, v, path, min, max);
          },
          [=](const Planning& p) { return FormatNumber(get(p)); }};
}
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// An enum member, by its names: table pairs each value with its name.
template <typename Enum, typename Get>
Field Choice(std::string key, std::vector<std::pair<Enum, std::string_view>> table, std::string doc,
             Get get) {
  std::string choices;
  for (size_t i = 0; i < table.size(); ++i)
    choices += (i ? (i + 1 == table.size() ? " or " : ", ") : "") + std::string(table[i].second);
  return {std::move(key), std::move(doc),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, Planning& p) {
            const std::string text = r.Scalar(v, path, choices.c_str());
            for (const auto& [value, name] : table)
              if (name == text) {
                get(p) = value;
                return;
              }
            r.Fail(path, v, "must be " + choices + ", got " + text);
          },
          [=](const Planning& p) {
            for (const auto& [value, name] : table)
              if (value == get(p)) return std::string(name);
            return std::string();
          }};
}

// A string member holding one of names.
template <typename Get>
Field Name(std::string key, std::span<const std::string_view> names, const char* what,
           std::string doc, Get get) {
  return {std::move(key), std::move(doc),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, Planning& p) {
            get(p) = OneOf(r, v, path, names, what);
          },
          [=](const Planning& p) { return get(p); }};
}

// A YAML list whose items read_one reads and format_one writes back: the shape Names, Numbers
// and Ints share. must_be: the error where the value is no list (or, !empty_ok, an empty one).
template <typename Get, typename ReadOne, typename FormatOne>
Field ListOf(std::string key, std::string doc, bool empty_ok, std::string must_be, Get get,
             ReadOne read_one, FormatOne format_one) {
  using T = typename MemberOf<Get>::value_type;
  return {std::move(key), std::move(doc),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, Planning& p) {
            if (!v.IsSequence() || (!empty_ok && v.size() == 0)) r.Fail(path, v, must_be);
            std::vector<T> values;
            for (size_t i = 0; i < v.size(); ++i)
              values.push_back(read_one(r, v[i], path + "[" + std::to_string(i) + "]"));
            get(p) = values;
          },
          [=](const Planning& p) {
            std::string out;
            for (const T& x : get(p)) out += (out.empty() ? "" : ", ") + format_one(x);
            return "[" + out + "]";
          }};
}

// A list of names (possibly empty), each one of names.
template <typename Get>
Field Names(std::string key, std::span<const std::string_view> names, const char* what,
            const char* example, std::string doc, Get get) {
  return ListOf(
      std::move(key), std::move(doc), true, std::string("must be a list of ") + example, get,
      [=](const Reader& r, const YAML::Node& v, const std::string& path) {
        return OneOf(r, v, path, names, what);
      },
      [](const std::string& n) { return n; });
}

// A non-empty list of numbers, each in [min, max].
template <typename Get>
Field Numbers(std::string key, double min, double max, std::string doc, Get get) {
  return ListOf(
      std::move(key), std::move(doc), false,
      "must be a non-empty list of numbers, e.g. [0, 0.5, 1]", get,
      [=](const Reader& r, const YAML::Node& v, const std::string& path) {
        return NumberIn(r, v, path, min, max);
      },
      [](double x) { return FormatNumber(x); });
}

// A list of integers (possibly empty), each in [min, max].
template <typename Get>
Field Ints(std::string key, std::int64_t min, std::int64_t max, const char* example,
           std::string doc, Get get) {
  using T = typename MemberOf<Get>::value_type;
  return ListOf(
      std::move(key), std::move(doc), true,
      std::string("must be a list of integers, e.g. ") + example, get,
      [=](const Reader& r, const YAML::Node& v, const std::string& path) {
        return static_cast<T>(r.Integer(v, path, min, max));
      },
      [](T x) { return std::to_string(x); });
}

// layout::SearchParams's switches (docs/layout.md) under prefix, through get(p), a reference
// to the SearchParams they set.
template <typename Get>
std::vector<Field> SearchFields(const std::string& prefix, Get get) {
  std::vector<Field> fields;
  auto flag = [&](const char* name, const char* doc, bool layout::SearchParams::*member) {
    fields.push_back(Flag(
        prefix + name, doc, [ get, member ](auto& p) -> auto& { return get(p).*member; }));
  };
  auto integer = [&](const char* name, std::int64_t min, std::int64_t max, const char* doc,
                     auto member) {
    fields.push_back(Int(
        prefix + name, min, max, doc,
        [ get, member ](auto& p) -> auto& { return get(p).*member; }));
  };
  using S = layout::SearchParams;
  flag("static_decomposition", "solve time-disjoint groups independently",
       &S::static_decomposition);
  flag("dynamic_decomposition", "the same after every placement", &S::dynamic_decomposition);
  flag("canonical", "only canonical placements", &S::canonical);
  flag("dominance", "skip dominated candidates", &S::dominance);
  flag("section_inference", "backtrack when a section cannot fit its buffers",
       &S::section_inference);
  flag("monotonic_floor", "canonical placements raise every section's floor", &S::monotonic_floor);
  flag("unallocated_floor", "space below a section's lowest reachable offset is lost",
       &S::unallocated_floor);
  integer("unallocated_floor_max_buffers", 0, kMaxInt, "... in groups of at most this many buffers",
          &S::unallocated_floor_max_buffers);
  flag("multiple_preorders", "round-robin over the preorders", &S::multiple_preorders);
  flag("minimalloc_preorders", "MiniMalloc's preorders by duration instead of roam's",
       &S::minimalloc_preorders);
  flag("capacity_search", "minimise the height by bisection over capacities", &S::capacity_search);
  integer("unanswered_bisections", 0, kMaxInt, "bisection probes cut short before a round stops",
          &S::unanswered_bisections);
  flag("bottom_left", "branch on the lowest section", &S::bottom_left);
  integer("bottom_left_max_buffers", 0, kMaxInt, "... in groups of at most this many buffers",
          &S::bottom_left_max_buffers);
  flag("portfolio", "the candidate branching joins the round-robin", &S::portfolio);
  flag("portfolio_first", "... opening each round after the first", &S::portfolio_first);
  flag("fewest_candidates", "branch on the section with the fewest candidates",
       &S::fewest_candidates);
  flag("backjumping", "conflict-directed backjumping", &S::backjumping);
  flag("conflict_ordering", "buffers blamed least are tried first", &S::conflict_ordering);
  flag("failure_cache", "remember failed states", &S::failure_cache);
  integer("failure_cache_entries", 0, kMaxBytes, "most states remembered per call",
          &S::failure_cache_entries);
  flag("identical_buffers", "interchangeable buffers tried once", &S::identical_buffers);
  integer("random_preorders", 0, kMaxInt, "shuffled preorders added to the round-robin",
          &S::random_preorders);
  integer("initial_node_limit", 1, kMaxBytes, "nodes per preorder in the first round",
          &S::initial_node_limit);
  return fields;
}

// Inserts more after the last field whose key starts with prefix, so that a section's fields
// stay together (the printed tree opens each section once).
void InsertAfter(std::vector<Field>& fields, const std::string& prefix, std::vector<Field> more);

}  // namespace roam::config::detail
