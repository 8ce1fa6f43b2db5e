#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <map>

#include "config/sections.h"
#include "core/error.h"
#include "core/io.h"
#include "gen/generate.h"

namespace roam::config {
namespace {

const std::vector<std::string> kSections = {"model", "training", "planner", "remat"};

// The planner and remat sections of root; remat's alignment is the planner's (set here only).
Planning ReadPlanning(const Reader& reader, const YAML::Node& root) {
  Planning p;
  ReadSection(reader, reader.Section(root, "planner"), "planner", PlannerFields(),
              MovedPlannerKeys(), p);
  ReadSection(reader, reader.Section(root, "remat"), "remat", RematFields(), MovedRematKeys(), p);
  p.remat.alignment = p.planner.alignment;
  return p;
}

}  // namespace

Config ParseConfig(std::string_view text, std::string_view source,
                   const std::vector<std::string>& overrides) {
  const std::string src(source);
  YAML::Node root = LoadYaml(text, src);
  if (root.IsNull() || !root.IsDefined()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw InputError(
        src + ": a config must be a mapping with model, training, planner and remat sections");

  const std::map<std::string, std::string> overridden = ApplyOverrides(root, overrides);
  Reader reader(src, overridden);
  reader.CheckKeys(root, "", kSections);
  Config config;
  config.source = src;
  ReadModel(reader, reader.Section(root, "model"), config.model);
  ReadTraining(reader, reader.Section(root, "training"), config.model, config.training);
  Planning planning = ReadPlanning(reader, root);
  config.planner = std::move(planning.planner);
  config.remat = std::move(planning.remat);
  if (config.model.name.empty()) {
    std::string stem = std::filesystem::path(src).stem().string();
    config.model.name = stem.empty() || stem.front() == '<'
                            ? std::string(gen::ToString(config.model.family))
                            : stem;
  }
  return config;
}

Config LoadConfig(const std::string& path, const std::vector<std::string>& overrides) {
  return ParseConfig(ReadFile(path), path, overrides);
}

Planning ParsePlanningOverrides(const std::vector<std::string>& overrides,
                                std::string_view source) {
  YAML::Node root(YAML::NodeType::Map);
  const std::map<std::string, std::string> overridden = ApplyOverrides(root, overrides);
  const Reader reader(std::string(source), overridden);
  for (const auto& [path, set] : overridden) {
    const std::string section = path.substr(0, path.find('.'));
    if (section != "planner" && section != "remat")
      reader.Fail(path, root[section],
                  "a graph file has no " + section +
                      " settings; only planner.* and remat.* keys apply to it");
  }
  return ReadPlanning(reader, root);
}

bool IsConfigPath(std::string_view path) {
  auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  return ends_with(".yaml") || ends_with(".yml");
}

Input LoadInput(const std::string& path, const std::vector<std::string>& overrides) {
  if (IsConfigPath(path)) {
    Config config = LoadConfig(path, overrides);
    return {gen::GenerateGraph(config), std::move(config.planner), std::move(config.remat)};
  }
  Planning planning = ParsePlanningOverrides(overrides, path);
  return {LoadGraph(path), std::move(planning.planner), std::move(planning.remat)};
}

}  // namespace roam::config
