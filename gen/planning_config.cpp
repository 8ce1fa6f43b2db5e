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
const std::vector<std::string> kRematKeys = {"method",
                                             "time_limit_s",
                                             "base_order",
                                             "rule",
                                             "greedy_max_steps",
                                             "greedy_stall_steps",
                                             "greedy_max_chain",
                                             "greedy_score",
                                             "greedy_count_siblings",
                                             "greedy_copy_before_writes",
                                             "greedy_prune_attempts",
                                             "greedy_swap_attempts",
                                             "greedy_swap_repair_steps",
                                             "checkpoint_max_segments_factor",
                                             "checkpoint_cuts",
                                             "blocks_rounds",
                                             "blocks_group_ops",
                                             "blocks_split_steps",
                                             "blocks_max_candidates",
                                             "blocks_search_nodes",
                                             "blocks_verifications",
                                             "blocks_in_sweep",
                                             "blocks_dp_group_ops",
                                             "blocks_dp_targets",
                                             "blocks_dp_retries",
                                             "blocks_dp_candidates",
                                             "blocks_dp_max_crossing",
                                             "blocks_dp_quantum",
                                             "blocks_dp_polish",
                                             "blocks_dp_in_best",
                                             "overhead_bound_cuts",
                                             "overhead_bound_time_limit_s",
                                             "overhead_bound_in_sweep",
                                             "witness_in_best",
                                             "ilp_max_ops",
                                             "ilp_max_computations",
                                             "ilp_window_stages",
                                             "ilp_window_time_limit_s",
                                             "lookahead_exponents",
                                             "lookahead_target_slacks",
                                             "lookahead_target_retries",
                                             "lookahead_hints",
                                             "lookahead_refine_attempts",
                                             "lookahead_max_computations_factor",
                                             "layout_retries",
                                             "layout_search_time_limit_s",
                                             "layout_search_max_nodes",
                                             "layout_search_wide",
                                             "greedy_long_chain",
                                             "fallback_base_orders"};
const std::vector<std::string> kRematRuleKeys = {"rng_state_kept", "state_update_skipped"};
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

void ReadRemat(const Reader& r, const YAML::Node& node, remat::RematParams& p) {
  r.CheckKeys(node, "remat", kRematKeys);
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string path = "remat." + key;
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    auto count = [&](std::int64_t min) {
      return static_cast<int>(r.Integer(v, path, min, std::numeric_limits<int>::max()));
    };
    auto one_of = [&](auto names, const char* what) {
      const std::string text = r.Scalar(v, path, what);
      if (std::find(names.begin(), names.end(), text) == names.end()) {
        std::string list;
        for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
        r.Fail(path, v, "must be one of " + list + ", got " + text);
      }
      return text;
    };
    if (key == "method") {
      p.method = one_of(remat::kMethodNames, "a method name");
    } else if (key == "time_limit_s") {
      p.time_limit_s = r.NonNegative(v, path);
    } else if (key == "base_order") {
      p.base_order = one_of(OrderNames(), "an order name");
    } else if (key == "rule") {
      r.Subsection(v, path, kRematRuleKeys);
      for (auto jt = v.begin(); jt != v.end(); ++jt) {
        const std::string k = jt->first.Scalar(), at = path + "." + k;
        if (k == "rng_state_kept") p.rule.rng_state_kept = r.Bool(jt->second, at);
        if (k == "state_update_skipped") p.rule.state_update_skipped = r.Bool(jt->second, at);
      }
    } else if (key == "greedy_max_steps") {
      p.greedy_max_steps = count(0);
    } else if (key == "greedy_stall_steps") {
      p.greedy_stall_steps = count(1);
    } else if (key == "greedy_max_chain") {
      p.greedy_max_chain = count(1);
    } else if (key == "greedy_score") {
      p.greedy_score = one_of(remat::kGreedyScores, "a score name");
    } else if (key == "greedy_count_siblings") {
      p.greedy_count_siblings = r.Bool(v, path);
    } else if (key == "greedy_copy_before_writes") {
      p.greedy_copy_before_writes = r.Bool(v, path);
    } else if (key == "greedy_prune_attempts") {
      p.greedy_prune_attempts = count(0);
    } else if (key == "greedy_swap_attempts") {
      p.greedy_swap_attempts = count(0);
    } else if (key == "greedy_swap_repair_steps") {
      p.greedy_swap_repair_steps = count(0);
    } else if (key == "checkpoint_max_segments_factor") {
      p.checkpoint_max_segments_factor = r.NonNegative(v, path);
    } else if (key == "blocks_rounds") {
      p.blocks_rounds = count(0);
    } else if (key == "blocks_group_ops") {
      p.blocks_group_ops = count(1);
    } else if (key == "blocks_split_steps") {
      p.blocks_split_steps = count(1);
    } else if (key == "blocks_max_candidates") {
      p.blocks_max_candidates = count(1);
    } else if (key == "blocks_search_nodes") {
      p.blocks_search_nodes = r.Integer(v, path, 1);
    } else if (key == "blocks_verifications") {
      p.blocks_verifications = count(1);
    } else if (key == "blocks_in_sweep") {
      p.blocks_in_sweep = r.Bool(v, path);
    } else if (key == "blocks_dp_group_ops") {
      p.blocks_dp_group_ops = count(0);
    } else if (key == "blocks_dp_targets") {
      p.blocks_dp_targets = static_cast<int>(r.Integer(v, path, 0, 16));
    } else if (key == "blocks_dp_retries") {
      p.blocks_dp_retries = count(0);
    } else if (key == "blocks_dp_candidates") {
      p.blocks_dp_candidates = count(1);
    } else if (key == "blocks_dp_max_crossing") {
      p.blocks_dp_max_crossing = r.Number(v, path);
      if (p.blocks_dp_max_crossing < 0.0 || p.blocks_dp_max_crossing > 1.0)
        r.Fail(path, v, "must be in [0, 1], got " + v.Scalar());
    } else if (key == "blocks_dp_quantum") {
      p.blocks_dp_quantum = r.Integer(v, path, 0);
    } else if (key == "blocks_dp_polish") {
      p.blocks_dp_polish = r.Bool(v, path);
    } else if (key == "blocks_dp_in_best") {
      p.blocks_dp_in_best = r.Bool(v, path);
    } else if (key == "overhead_bound_cuts") {
      p.overhead_bound_cuts = count(0);
    } else if (key == "overhead_bound_time_limit_s") {
      p.overhead_bound_time_limit_s = r.NonNegative(v, path);
    } else if (key == "overhead_bound_in_sweep") {
      p.overhead_bound_in_sweep = r.Bool(v, path);
    } else if (key == "witness_in_best") {
      p.witness_in_best = r.Bool(v, path);
    } else if (key == "checkpoint_cuts") {
      p.checkpoint_cuts = one_of(remat::kCheckpointCuts, "a cut rule");
    } else if (key == "ilp_max_ops") {
      p.ilp_max_ops = count(0);
    } else if (key == "ilp_max_computations") {
      p.ilp_max_computations = count(1);
    } else if (key == "ilp_window_stages") {
      p.ilp_window_stages = count(1);
    } else if (key == "ilp_window_time_limit_s") {
      p.ilp_window_time_limit_s = r.NonNegative(v, path);
    } else if (key == "lookahead_exponents" || key == "lookahead_target_slacks") {
      if (!v.IsSequence() || v.size() == 0)
        r.Fail(path, v, "must be a non-empty list of numbers, e.g. [0, 0.5, 1]");
      std::vector<double> values;
      for (size_t i = 0; i < v.size(); ++i)
        values.push_back(r.NonNegative(v[i], path + "[" + std::to_string(i) + "]"));
      (key == "lookahead_exponents" ? p.lookahead_exponents : p.lookahead_target_slacks) = values;
    } else if (key == "lookahead_target_retries") {
      p.lookahead_target_retries = count(0);
    } else if (key == "lookahead_hints") {
      p.lookahead_hints = count(0);
    } else if (key == "lookahead_refine_attempts") {
      p.lookahead_refine_attempts = count(0);
    } else if (key == "lookahead_max_computations_factor") {
      p.lookahead_max_computations_factor = count(1);
    } else if (key == "layout_retries") {
      p.layout_retries = count(0);
    } else if (key == "layout_search_time_limit_s") {
      p.layout_search_time_limit_s = r.NonNegative(v, path);
    } else if (key == "layout_search_max_nodes") {
      p.layout_search_max_nodes = r.Integer(v, path, 0);
    } else if (key == "greedy_long_chain") {
      p.greedy_long_chain = count(0);
    } else if (key == "fallback_base_orders") {
      if (!v.IsSequence()) r.Fail(path, v, "must be a list of order names, e.g. [xla-list]");
      std::vector<std::string> orders;
      for (size_t i = 0; i < v.size(); ++i) {
        const std::string name = v[i].IsScalar() ? v[i].as<std::string>() : std::string();
        if (std::find(OrderNames().begin(), OrderNames().end(), name) == OrderNames().end())
          r.Fail(path + "[" + std::to_string(i) + "]", v[i], "must be an order name");
        orders.push_back(name);
      }
      p.fallback_base_orders = orders;
    } else if (key == "layout_search_wide") {
      p.layout_search_wide = r.Bool(v, path);
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
