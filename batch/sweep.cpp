// Sweep files and sharding.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "batch/batch.h"
#include "config/yaml.h"
#include "core/error.h"
#include "core/io.h"

namespace roam::batch {
namespace {

[[noreturn]] void Fail(std::string_view source, std::string_view field, std::string_view what) {
  throw InputError(std::string(source) + ": " + std::string(field) + ": " + std::string(what));
}

std::vector<std::string> Scalars(const YAML::Node& node, std::string_view source,
                                 std::string_view field) {
  std::vector<std::string> out;
  if (node.IsScalar()) {
    out.push_back(node.Scalar());
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      if (!node[i].IsScalar())
        Fail(source, std::string(field) + "[" + std::to_string(i) + "]", "expected a scalar");
      out.push_back(node[i].Scalar());
    }
  } else {
    Fail(source, field, "expected a scalar or a list of scalars");
  }
  if (out.empty()) Fail(source, field, "must not be empty");
  return out;
}

std::string SafeName(std::string_view text) {
  std::string out;
  for (char c : text) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '.' || c == '-' || c == '_' || c == '=';
    out += keep ? c : '_';
  }
  return out;
}

}  // namespace

Shard ParseShard(std::string_view text) {
  Shard s;
  size_t slash = text.find('/');
  auto number = [&](std::string_view part, int* value) {
    auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), *value);
    return ec == std::errc() && end == part.data() + part.size() && !part.empty();
  };
  if (slash == std::string_view::npos || !number(text.substr(0, slash), &s.index) ||
      !number(text.substr(slash + 1), &s.count) || s.count < 1 || s.index < 0 || s.index >= s.count)
    throw InputError("--shard: expected i/N with 0 <= i < N, got \"" + std::string(text) + "\"");
  return s;
}

std::string ToString(Shard shard) {
  return std::to_string(shard.index) + "/" + std::to_string(shard.count);
}

std::uint64_t StableHash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

bool InShard(std::string_view key, Shard shard) {
  return StableHash(key) % static_cast<std::uint64_t>(shard.count) ==
         static_cast<std::uint64_t>(shard.index);
}

Sweep ParseSweep(std::string_view text, std::string_view source) {
  YAML::Node root = config::LoadYaml(text, std::string(source));
  if (!root.IsMap()) Fail(source, "(top level)", "expected a mapping");
  Sweep sweep;
  sweep.source = std::string(source);
  sweep.name = std::filesystem::path(std::string(source)).stem().string();
  std::filesystem::path base = std::filesystem::path(std::string(source)).parent_path();
  static const std::set<std::string> kKeys = {"name", "inputs", "set", "grid", "repeats"};
  for (const auto& entry : root) {
    std::string key = entry.first.as<std::string>();
    if (kKeys.count(key) == 0)
      Fail(source, key, "unknown key (expected name, inputs, set, grid, repeats)");
  }
  if (root["name"]) {
    if (!root["name"].IsScalar()) Fail(source, "name", "expected a string");
    sweep.name = root["name"].Scalar();
  }
  if (!root["inputs"]) Fail(source, "inputs", "missing: list the configs or graphs to sweep");
  for (const std::string& input : Scalars(root["inputs"], source, "inputs")) {
    std::filesystem::path p(input);
    std::filesystem::path resolved = p.is_absolute() || base.empty() ? p : base / p;
    std::error_code ec;
    if (!std::filesystem::is_regular_file(resolved, ec))
      Fail(source, "inputs", "no such file: " + input + " (looked for " + resolved.string() + ")");
    sweep.input_names.push_back(input);
    sweep.inputs.push_back(resolved.lexically_normal().string());
  }
  if (root["set"]) {
    sweep.overrides = Scalars(root["set"], source, "set");
    for (const std::string& o : sweep.overrides)
      if (o.find('=') == std::string::npos) Fail(source, "set", "expected key=value, got " + o);
  }
  if (root["grid"]) {
    if (!root["grid"].IsMap()) Fail(source, "grid", "expected a mapping of key: [values]");
    for (const auto& entry : root["grid"]) {
      SweepAxis axis;
      axis.key = entry.first.as<std::string>();
      std::string field = "grid." + axis.key;
      if (axis.key == "threads") axis.key = "planner.threads";
      if (axis.key != "mode" && axis.key.find('.') == std::string::npos)
        Fail(source, field, "expected mode, threads or a config key such as model.batch");
      for (const auto& a : sweep.grid)
        if (a.key == axis.key) Fail(source, field, "given twice");
      axis.values = Scalars(entry.second, source, field);
      if (axis.key == "mode")
        for (const std::string& v : axis.values)
          if (!ParseMode(v)) Fail(source, field, "unknown mode " + v + " (heuristic, model, roam)");
      sweep.grid.push_back(std::move(axis));
    }
  }
  if (root["repeats"]) {
    int repeats = 0;
    try {
      repeats = root["repeats"].as<int>();
    } catch (const YAML::Exception&) {
      Fail(source, "repeats", "expected a positive integer");
    }
    if (repeats < 1) Fail(source, "repeats", "expected a positive integer");
    if (repeats > kMaxRepeats)
      Fail(source, "repeats",
           std::to_string(repeats) + " is more than the limit of " + std::to_string(kMaxRepeats));
    sweep.repeats = repeats;
  }
  // The runs the grid expands to, counted before any is made.
  std::int64_t runs = static_cast<std::int64_t>(sweep.inputs.size());
  for (const SweepAxis& axis : sweep.grid) {
    runs *= static_cast<std::int64_t>(axis.values.size());  // both factors <= the limit
    if (runs > kMaxSweepRuns)
      Fail(source, "grid." + axis.key,
           "the grid has more than " + std::to_string(kMaxSweepRuns) +
               " runs (inputs times the values of every key); split the sweep");
  }
  return sweep;
}

Sweep LoadSweep(const std::string& path) { return ParseSweep(ReadFile(path), path); }

std::vector<RunSpec> ExpandSweep(const Sweep& sweep) {
  std::vector<RunSpec> specs;
  std::map<std::string, int> names;
  for (size_t in = 0; in < sweep.inputs.size(); ++in) {
    std::vector<size_t> at(sweep.grid.size(), 0);
    while (true) {
      RunSpec s;
      s.input = sweep.inputs[in];
      s.overrides = sweep.overrides;
      s.repeats = sweep.repeats;
      s.name = std::filesystem::path(sweep.input_names[in]).stem().string();
      for (size_t a = 0; a < sweep.grid.size(); ++a) {
        const SweepAxis& axis = sweep.grid[a];
        const std::string& value = axis.values[at[a]];
        s.params.emplace_back(axis.key, value);
        if (axis.key == "mode")
          s.mode = *ParseMode(value);
        else
          s.overrides.push_back(axis.key + "=" + value);
        s.name += "__" + axis.key + "=" + value;
      }
      s.key = RunKey(sweep.input_names[in], s.overrides, s.mode);
      s.name = SafeName(s.name);
      if (names[s.name]++ > 0) {
        char hash[24];
        std::snprintf(hash, sizeof hash, "-%08llx",
                      static_cast<unsigned long long>(StableHash(s.key) & 0xffffffffULL));
        s.name += hash;
      }
      specs.push_back(std::move(s));
      // Odometer over the grid, last axis fastest.
      size_t a = sweep.grid.size();
      while (a > 0 && ++at[a - 1] == sweep.grid[a - 1].values.size()) at[--a] = 0;
      if (a == 0) break;
    }
  }
  return specs;
}

}  // namespace roam::batch
