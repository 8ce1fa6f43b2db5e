// The readers of a config's model and training sections (config/model.cpp); the planner and
// remat sections are read from their field descriptions (config/fields.h). Internal to
// config/: its interface is config/config.h.
#pragma once

#include <yaml-cpp/yaml.h>

#include "config/yaml.h"
#include "gen/config.h"

namespace roam::config {

// Each checks every key of its section and throws InputError naming the key path.
void ReadModel(const Reader& r, const YAML::Node& node, gen::ModelConfig& m);
void ReadTraining(const Reader& r, const YAML::Node& node, const gen::ModelConfig& m,
                  gen::TrainingConfig& t);

}  // namespace roam::config
