// Field descriptions: every planner and remat setting described once, in the way HiGHS's
// option records are: its key (the YAML path), the member it sets, its bounds and a one-line
// doc. The generic reader walks them to read a config's sections and `--set` overrides, the
// printer to write the resolved tree (`roam config`), and tests/config/docs_test.cpp checks
// docs/configs.md against them.
//
// In: a YAML section node. Out: the member each key names, checked against its bounds; any
// problem throws InputError naming the source and the key path (config/yaml.h).
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config/yaml.h"
#include "optimizer/params.h"
#include "remat/params.h"

namespace roam::config {

// What a config's planner and remat sections resolve to.
struct Planning {
  OptimizerParams planner;
  remat::RematParams remat;  // alignment: the planner's
};

struct Field {
  std::string key;  // full dotted path: "planner.partition.node_limit"
  std::string doc;  // one line: what it sets, its unit
  std::function<void(const Reader&, const YAML::Node&, const std::string& path, Planning&)> read;
  // The value as YAML flow text ("40", "true", "[greedy, lookahead]").
  std::function<std::string(const Planning&)> print;
};

// In the order of optimizer/params.h and remat/params.h.
const std::vector<Field>& PlannerFields();
const std::vector<Field>& RematFields();

// Keys of earlier configs, as full paths, and where each went ("planner.node_limit" ->
// "planner.partition.node_limit"); refused with a "has moved to" message.
const std::vector<std::pair<std::string, std::string>>& MovedPlannerKeys();
const std::vector<std::pair<std::string, std::string>>& MovedRematKeys();

// Reads the section `name` ("planner" or "remat") of a config: every key must be a field of
// fields or a subsection leading to one; moved keys are refused with where they went.
void ReadSection(const Reader& r, const YAML::Node& node, const std::string& name,
                 const std::vector<Field>& fields,
                 const std::vector<std::pair<std::string, std::string>>& moved, Planning& out);

// A double as the shortest text that reads back to it ("0.5", "600", "1e-08").
std::string FormatNumber(double value);

}  // namespace roam::config
