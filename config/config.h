// Configuration, one tree (docs/configs.md): a YAML config's model and training (what the
// generator builds, gen/config.h), and the settings of the planner (optimizer/params.h) and of
// remat (remat/params.h), read through their field descriptions (config/fields.h).
//
// In: a YAML file (or text) plus `--set a.b=v` overrides, applied to the YAML tree before
// anything is validated; or a graph file with planner/remat overrides. Out: a Config (or an
// Input, the graph generated or loaded) whose every field holds a checked value. Any problem
// (YAML syntax, unknown or moved key, wrong type, value out of range) throws InputError naming
// the file and the key path; an unknown key comes with the closest valid key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "config/fields.h"
#include "core/graph.h"
#include "gen/config.h"

namespace roam::config {

// A config file resolved: the generator's part and the planning part.
struct Config : gen::Config {
  OptimizerParams planner;
  remat::RematParams remat;  // its alignment is planner.alignment
};

// overrides: "model.batch=4" style; the value is read as a YAML scalar.
Config ParseConfig(std::string_view text, std::string_view source,
                   const std::vector<std::string>& overrides = {});
Config LoadConfig(const std::string& path, const std::vector<std::string>& overrides = {});

// The planner and remat sections alone, from overrides ("remat.greedy.max_steps=500"), for an
// input that is a graph file rather than a config: defaults elsewhere. Messages name source;
// a model or training key is an InputError, since a graph file has neither.
Planning ParsePlanningOverrides(const std::vector<std::string>& overrides, std::string_view source);

// What a command plans: the graph (generated from a .yaml/.yml config, else read as a
// roam-graph-v1 file) and the settings that came with it.
struct Input {
  Graph graph;
  OptimizerParams planner;
  remat::RematParams remat;
};
Input LoadInput(const std::string& path, const std::vector<std::string>& overrides = {});
bool IsConfigPath(std::string_view path);

// The resolved tree as YAML, every key with its value and its one-line doc (`roam config`).
// Without a config (nullptr), the planner's and remat's defaults only.
std::string PrintYaml(const Config* config);
// A resolved config's model and training sections as one JSON object (`roam config --json`),
// what tools/torch_export reads instead of parsing the YAML itself.
std::string PrintModelJson(const Config& config);

}  // namespace roam::config
