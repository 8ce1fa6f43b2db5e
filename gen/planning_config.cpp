#include "gen/planning_config.h"

#include <algorithm>
#include <limits>
#include <map>

#include "baseline/orders.h"
#include "core/bytes.h"
#include "gen/config.h"

namespace roam::gen {
namespace {

using detail::Reader;

const std::vector<std::string> kPlannerKeys = {"mode",
                                               "streams",
                                               "threads",
                                               "time_limit",
                                               "alignment",
                                               "bound_shortcut",
                                               "best_update_placement",
                                               "solver_overshoot",
                                               "partition",
                                               "leaf_order",
                                               "leaf_layout",
                                               "final_layout",
                                               "defer_update_tails"};
const std::vector<std::string> kPartitionKeys = {"node_limit", "alpha", "delay_radius",
                                                 "update_placement"};
const std::vector<std::string> kLeafOrderKeys = {"enabled", "time_limit"};
const std::vector<std::string> kLeafLayoutKeys = {"enabled",      "engine",      "time_limit",
                                                  "max_storages", "bottom_left", "max_nodes"};
const std::vector<std::string> kFinalLayoutKeys = {"enabled", "time_limit", "bottom_left",
                                                   "max_nodes"};
// Flat planner keys of earlier configs, and where they live now.
const std::vector<std::pair<std::string, std::string>> kMovedPlannerKeys = {
    {"node_limit", "planner.partition.node_limit"},
    {"alpha", "planner.partition.alpha"},
    {"delay_radius", "planner.partition.delay_radius"},
    {"leaf_time_limit", "planner.leaf_order.time_limit"}};

}  // namespace

namespace detail {

void ReadPlanner(const Reader& r, const YAML::Node& node, OptimizerParams& p) {
  for (const auto& [old_key, now] : kMovedPlannerKeys)
    if (node[old_key].IsDefined())
      r.Fail("planner." + old_key, node[old_key], "has moved to " + now);
  r.CheckKeys(node, "planner", kPlannerKeys);
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string path = "planner." + key;
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    if (key == "mode") {
      const std::string text = r.Scalar(v, path, "roam or model");
      if (!ParseOptimizeMode(text, &p.mode)) r.Fail(path, v, "must be roam or model, got " + text);
    } else if (key == "streams") {
      const std::string text = r.Scalar(v, path, "single or multi");
      if (!ParseStreams(text, &p.streams)) r.Fail(path, v, "must be single or multi, got " + text);
    } else if (key == "threads") {
      p.threads = static_cast<int>(r.Integer(v, path, 0, kMaxThreads));
    } else if (key == "time_limit") {
      p.time_limit = r.NonNegative(v, path);
    } else if (key == "alignment") {
      p.alignment = r.Integer(v, path, 1, kMaxAlignment);
    } else if (key == "bound_shortcut") {
      p.bound_shortcut = r.Bool(v, path);
    } else if (key == "best_update_placement") {
      p.best_update_placement = r.Bool(v, path);
    } else if (key == "defer_update_tails") {
      p.defer_update_tails = r.Bool(v, path);
    } else if (key == "solver_overshoot") {
      p.solver_overshoot = r.NonNegative(v, path);
    } else if (key == "partition") {
      const YAML::Node& sec = r.Subsection(v, path, kPartitionKeys);
      for (auto jt = sec.begin(); jt != sec.end(); ++jt) {
        const std::string k = jt->first.Scalar(), at = path + "." + k;
        const YAML::Node x = jt->second;
        if (k == "node_limit") {
          p.partition.node_limit =
              static_cast<int>(r.Integer(x, at, 1, std::numeric_limits<int>::max()));
        } else if (k == "alpha") {
          p.partition.alpha = r.NonNegative(x, at);
        } else if (k == "delay_radius") {
          p.partition.delay_radius = r.NonNegative(x, at);
        } else if (k == "update_placement") {
          const std::string text = r.Scalar(x, at, "scheduled, when-ready, at-end or split");
          bool found = false;
          for (UpdatePlacement u : {UpdatePlacement::kScheduled, UpdatePlacement::kWhenReady,
                                    UpdatePlacement::kAtEnd, UpdatePlacement::kSplit})
            if (ToString(u) == text) {
              p.partition.update_placement = u;
              found = true;
            }
          if (!found) r.Fail(at, x, "must be scheduled, when-ready, at-end or split, got " + text);
        }
      }
    } else if (key == "leaf_order") {
      const YAML::Node& sec = r.Subsection(v, path, kLeafOrderKeys);
      for (auto jt = sec.begin(); jt != sec.end(); ++jt) {
        const std::string k = jt->first.Scalar(), at = path + "." + k;
        if (k == "enabled") p.leaf_order.enabled = r.Bool(jt->second, at);
        if (k == "time_limit") p.leaf_order.time_limit = r.NonNegative(jt->second, at);
      }
    } else if (key == "leaf_layout") {
      const YAML::Node& sec = r.Subsection(v, path, kLeafLayoutKeys);
      for (auto jt = sec.begin(); jt != sec.end(); ++jt) {
        const std::string k = jt->first.Scalar(), at = path + "." + k;
        if (k == "enabled") p.leaf_layout.enabled = r.Bool(jt->second, at);
        if (k == "bottom_left") p.leaf_layout.bottom_left = r.Bool(jt->second, at);
        if (k == "time_limit") p.leaf_layout.time_limit = r.NonNegative(jt->second, at);
        if (k == "max_nodes") p.leaf_layout.max_nodes = r.Integer(jt->second, at, 0);
        if (k == "max_storages")
          p.leaf_layout.max_storages =
              static_cast<int>(r.Integer(jt->second, at, 0, std::numeric_limits<int>::max()));
        if (k == "engine") {
          const std::string text = r.Scalar(jt->second, at, "search or ilp");
          if (text != "search" && text != "ilp")
            r.Fail(at, jt->second, "must be search or ilp, got " + text);
          p.leaf_layout.engine = text == "ilp" ? LayoutEngine::kIlp : LayoutEngine::kSearch;
        }
      }
    } else if (key == "final_layout") {
      const YAML::Node& sec = r.Subsection(v, path, kFinalLayoutKeys);
      for (auto jt = sec.begin(); jt != sec.end(); ++jt) {
        const std::string k = jt->first.Scalar(), at = path + "." + k;
        if (k == "enabled") p.final_layout.enabled = r.Bool(jt->second, at);
        if (k == "bottom_left") p.final_layout.bottom_left = r.Bool(jt->second, at);
        if (k == "time_limit") p.final_layout.time_limit = r.NonNegative(jt->second, at);
        if (k == "max_nodes") p.final_layout.max_nodes = r.Integer(jt->second, at, 0);
      }
    }
  }
}

}  // namespace detail

PlanningSettings ParsePlanningOverrides(const std::vector<std::string>& overrides,
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
  PlanningSettings settings;
  detail::ReadPlanner(reader, reader.Section(root, "planner"), settings.planner);
  detail::ReadRemat(reader, reader.Section(root, "remat"), settings.remat);
  settings.remat.alignment = settings.planner.alignment;
  return settings;
}

}  // namespace roam::gen
