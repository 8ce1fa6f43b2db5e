// The planner and remat sections of a config (docs/configs.md): how to plan a graph, as
// opposed to which graph to generate (gen/config.cpp). A graph file takes these sections alone
// from `--set` overrides (ParsePlanningOverrides); a config reads them beside model and
// training (ParseConfig), through the readers below.
#pragma once

#include <yaml-cpp/yaml.h>

#include "gen/yaml_reader.h"
#include "optimizer/params.h"
#include "remat/params.h"

namespace roam::gen::detail {

// Each checks every key of its section and throws InputError naming the key path.
void ReadPlanner(const Reader& r, const YAML::Node& node, OptimizerParams& p);
void ReadRemat(const Reader& r, const YAML::Node& node, remat::RematParams& p);

}  // namespace roam::gen::detail
