#include "gen/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>

#include "baseline/orders.h"
#include "core/bytes.h"
#include "core/error.h"
#include "core/io.h"
#include "gen/yaml_reader.h"

namespace roam::gen {
namespace {

using detail::Choices;
using detail::Join;
using detail::Named;
using detail::Reader;

constexpr Named<Family> kFamilies[] = {
    {Family::kGpt2, "gpt2"},
    {Family::kBert, "bert"},
    {Family::kVit, "vit"},
    {Family::kResnet, "resnet"},
    {Family::kVgg, "vgg"},
    {Family::kAlexnet, "alexnet"},
    {Family::kMobilenetV2, "mobilenet_v2"},
};
constexpr Named<OptimizerKind> kOptimizers[] = {
    {OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdam, "adam"}, {OptimizerKind::kAdamW, "adamw"}};
constexpr Named<DType> kDTypes[] = {
    {DType::kFloat32, "float32"}, {DType::kFloat16, "float16"}, {DType::kBFloat16, "bfloat16"}};
constexpr Named<Device> kDevices[] = {{Device::kCuda, "cuda"}, {Device::kCpu, "cpu"}};

// Keys each family reads, beyond the ones every family has.
const std::vector<std::string> kCommonModelKeys = {"family", "name", "batch", "dtype", "device"};
const std::vector<std::string> kTransformerKeys = {"n_layer", "n_embd", "n_head", "n_inner",
                                                   "dropout"};

std::vector<std::string> FamilyKeys(Family family) {
  std::vector<std::string> keys = kCommonModelKeys;
  auto add = [&](std::initializer_list<const char*> more) {
    keys.insert(keys.end(), more.begin(), more.end());
  };
  switch (family) {
    case Family::kGpt2:
      keys.insert(keys.end(), kTransformerKeys.begin(), kTransformerKeys.end());
      add({"seq_len", "vocab", "n_positions", "tie_embeddings"});
      break;
    case Family::kBert:
      keys.insert(keys.end(), kTransformerKeys.begin(), kTransformerKeys.end());
      add({"seq_len", "vocab", "n_positions", "type_vocab"});
      break;
    case Family::kVit:
      keys.insert(keys.end(), kTransformerKeys.begin(), kTransformerKeys.end());
      add({"image_size", "patch_size", "num_classes"});
      break;
    case Family::kResnet:
      add({"depth", "image_size", "num_classes"});
      break;
    case Family::kVgg:
      add({"depth", "batch_norm", "image_size", "num_classes", "dropout"});
      break;
    case Family::kAlexnet:
      add({"image_size", "num_classes", "dropout"});
      break;
    case Family::kMobilenetV2:
      add({"width_mult", "image_size", "num_classes", "dropout"});
      break;
  }
  return keys;
}

std::vector<std::string> AllModelKeys() {
  std::vector<std::string> all;
  for (const auto& f : kFamilies)
    for (const std::string& k : FamilyKeys(f.value))
      if (std::find(all.begin(), all.end(), k) == all.end()) all.push_back(k);
  return all;
}

const std::vector<std::string> kSections = {"model", "training", "planner", "remat"};
const std::vector<std::string> kTrainingKeys = {"optimizer",    "lr",    "momentum", "nesterov",
                                                "weight_decay", "beta1", "beta2",    "eps"};
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
const std::vector<std::string> kLeafLayoutKeys = {"enabled", "engine", "time_limit", "max_storages",
                                                  "bottom_left"};
const std::vector<std::string> kFinalLayoutKeys = {"enabled", "time_limit", "bottom_left"};
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

// Channel counts scale with width_mult; beyond this a network's width is no longer a
// MobileNetV2 (and the double-to-integer channel arithmetic would leave its range).
constexpr int kMaxWidthMult = 1024;

void ReadModel(const Reader& r, const YAML::Node& node, ModelConfig& m) {
  YAML::Node family = node["family"];
  if (!family.IsDefined() || family.IsNull())
    r.Fail("model.family", YAML::Node(), "is missing; expected " + Choices(kFamilies));
  m = ModelDefaults(r.Choice(family, "model.family", kFamilies));
  const std::vector<std::string> allowed = FamilyKeys(m.family);
  r.CheckKeys(node, "model", allowed, AllModelKeys(),
              "does not apply to family " + std::string(ToString(m.family)));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string path = "model." + key;
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    if (key == "family") continue;
    if (key == "name")
      m.name = r.Scalar(v, path, "a string");
    else if (key == "batch")
      m.batch = r.Integer(v, path, 1);
    else if (key == "dtype")
      m.dtype = r.Choice(v, path, kDTypes);
    else if (key == "device")
      m.device = r.Choice(v, path, kDevices);
    else if (key == "n_layer")
      m.n_layer = r.Integer(v, path, 1);
    else if (key == "n_embd")
      m.n_embd = r.Integer(v, path, 1);
    else if (key == "n_head")
      m.n_head = r.Integer(v, path, 1);
    else if (key == "n_inner")
      m.n_inner = r.Integer(v, path, 0);
    else if (key == "dropout") {
      m.dropout = r.Number(v, path);
      if (m.dropout < 0.0 || m.dropout >= 1.0)
        r.Fail(path, v, "must be in [0, 1), got " + v.Scalar());
    } else if (key == "seq_len")
      m.seq_len = r.Integer(v, path, 1);
    else if (key == "vocab")
      m.vocab = r.Integer(v, path, 1);
    else if (key == "n_positions")
      m.n_positions = r.Integer(v, path, 1);
    else if (key == "tie_embeddings")
      m.tie_embeddings = r.Bool(v, path);
    else if (key == "type_vocab")
      m.type_vocab = r.Integer(v, path, 1);
    else if (key == "image_size")
      m.image_size = r.Integer(v, path, 1);
    else if (key == "num_classes")
      m.num_classes = r.Integer(v, path, 1);
    else if (key == "patch_size")
      m.patch_size = r.Integer(v, path, 1);
    else if (key == "depth")
      m.depth = r.Integer(v, path, 1);
    else if (key == "batch_norm")
      m.batch_norm = r.Bool(v, path);
    else if (key == "width_mult") {
      m.width_mult = r.Number(v, path);
      if (m.width_mult <= 0.0) r.Fail(path, v, "must be positive, got " + v.Scalar());
      if (m.width_mult > kMaxWidthMult)
        r.Fail(path, v, "must be at most " + std::to_string(kMaxWidthMult) + ", got " + v.Scalar());
    }
  }

  const bool transformer =
      m.family == Family::kGpt2 || m.family == Family::kBert || m.family == Family::kVit;
  if (transformer && m.n_embd % m.n_head != 0)
    r.Fail("model.n_embd", node["n_embd"],
           std::to_string(m.n_embd) + " is not divisible by model.n_head (" +
               std::to_string(m.n_head) + ")");
  if ((m.family == Family::kGpt2 || m.family == Family::kBert) && m.seq_len > m.n_positions)
    r.Fail("model.seq_len", node["seq_len"],
           std::to_string(m.seq_len) + " exceeds model.n_positions (" +
               std::to_string(m.n_positions) + ")");
  if (m.family == Family::kVit && m.image_size % m.patch_size != 0)
    r.Fail("model.image_size", node["image_size"],
           std::to_string(m.image_size) + " is not a multiple of model.patch_size (" +
               std::to_string(m.patch_size) + ")");
  auto check_depth = [&](std::initializer_list<std::int64_t> valid) {
    std::string list;
    for (std::int64_t d : valid) {
      if (d == m.depth) return;
      list += (list.empty() ? "" : ", ") + std::to_string(d);
    }
    r.Fail("model.depth", node["depth"],
           "is " + std::to_string(m.depth) + ", expected one of " + list);
  };
  if (m.family == Family::kResnet) check_depth({18, 34, 50, 101, 152});
  if (m.family == Family::kVgg) check_depth({11, 13, 16, 19});
  // Below these sizes a pooling layer would produce an empty feature map.
  const std::int64_t min_image = m.family == Family::kVgg       ? 32
                                 : m.family == Family::kAlexnet ? 63
                                                                : 1;
  if (m.image_size < min_image)
    r.Fail("model.image_size", node["image_size"],
           std::to_string(m.image_size) + " is too small for " + std::string(ToString(m.family)) +
               " (at least " + std::to_string(min_image) + ")");
}

void ReadTraining(const Reader& r, const YAML::Node& node, TrainingConfig& t) {
  OptimizerKind kind = OptimizerKind::kAdam;
  if (YAML::Node o = node["optimizer"]; o.IsDefined() && !o.IsNull())
    kind = r.Choice(o, "training.optimizer", kOptimizers);
  t = TrainingDefaults(kind);
  std::vector<std::string> allowed = {"optimizer", "lr", "weight_decay"};
  if (kind == OptimizerKind::kSgd)
    allowed.insert(allowed.end(), {"momentum", "nesterov"});
  else
    allowed.insert(allowed.end(), {"beta1", "beta2", "eps"});
  r.CheckKeys(node, "training", allowed, kTrainingKeys,
              "does not apply to optimizer " + std::string(ToString(kind)));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string path = "training." + key;
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    auto beta = [&](double x) {
      if (x < 0.0 || x >= 1.0) r.Fail(path, v, "must be in [0, 1), got " + v.Scalar());
      return x;
    };
    if (key == "optimizer") continue;
    if (key == "lr") {
      t.lr = r.Number(v, path);
      if (t.lr <= 0.0) r.Fail(path, v, "must be positive, got " + v.Scalar());
    } else if (key == "momentum")
      t.momentum = r.NonNegative(v, path);
    else if (key == "nesterov")
      t.nesterov = r.Bool(v, path);
    else if (key == "weight_decay")
      t.weight_decay = r.NonNegative(v, path);
    else if (key == "beta1")
      t.beta1 = beta(r.Number(v, path));
    else if (key == "beta2")
      t.beta2 = beta(r.Number(v, path));
    else if (key == "eps") {
      t.eps = r.Number(v, path);
      if (t.eps <= 0.0) r.Fail(path, v, "must be positive, got " + v.Scalar());
    }
  }
  if (t.nesterov && t.momentum <= 0.0)
    r.Fail("training.nesterov", node["nesterov"], "needs a positive training.momentum");
}

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
      p.threads = static_cast<int>(r.Integer(v, path, 0));
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
          p.partition.node_limit = static_cast<int>(r.Integer(x, at, 1));
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
        if (k == "max_storages")
          p.leaf_layout.max_storages = static_cast<int>(r.Integer(jt->second, at, 0));
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

}  // namespace

std::string_view ToString(Family family) {
  for (const auto& f : kFamilies)
    if (f.value == family) return f.name;
  return "";
}

std::string_view ToString(OptimizerKind kind) {
  for (const auto& o : kOptimizers)
    if (o.value == kind) return o.name;
  return "";
}

ModelConfig ModelDefaults(Family family) {
  ModelConfig m;
  m.family = family;
  switch (family) {
    case Family::kGpt2:
      break;  // GPT-2 small
    case Family::kBert:
      m.seq_len = 512;
      m.vocab = 30522;
      m.n_positions = 512;
      break;
    case Family::kVit:
      m.dropout = 0.0;  // torchvision's vit_b_16
      m.batch = 32;
      break;
    case Family::kResnet:
      m.batch = 32;
      break;
    case Family::kVgg:
      m.depth = 11;
      m.dropout = 0.5;
      m.batch = 32;
      break;
    case Family::kAlexnet:
      m.dropout = 0.5;
      m.batch = 32;
      break;
    case Family::kMobilenetV2:
      m.dropout = 0.2;
      m.batch = 32;
      break;
  }
  return m;
}

std::vector<std::pair<std::string, std::int64_t>> IntegerModelKeys(const ModelConfig& m) {
  const std::pair<const char*, std::int64_t> all[] = {{"batch", m.batch},
                                                      {"n_layer", m.n_layer},
                                                      {"n_embd", m.n_embd},
                                                      {"n_head", m.n_head},
                                                      {"n_inner", m.n_inner},
                                                      {"seq_len", m.seq_len},
                                                      {"vocab", m.vocab},
                                                      {"n_positions", m.n_positions},
                                                      {"type_vocab", m.type_vocab},
                                                      {"image_size", m.image_size},
                                                      {"num_classes", m.num_classes},
                                                      {"patch_size", m.patch_size},
                                                      {"depth", m.depth}};
  const std::vector<std::string> keys = FamilyKeys(m.family);
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& [key, value] : all)
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      out.emplace_back("model." + std::string(key), value);
  return out;
}

TrainingConfig TrainingDefaults(OptimizerKind kind) {
  TrainingConfig t;
  t.optimizer = kind;
  if (kind == OptimizerKind::kSgd) t.lr = 0.01;
  if (kind == OptimizerKind::kAdamW) t.weight_decay = 0.01;
  return t;
}

Config ParseConfig(std::string_view text, std::string_view source,
                   const std::vector<std::string>& overrides) {
  const std::string src(source);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    throw InputError(src + ": YAML syntax error at line " + std::to_string(e.mark.line + 1) +
                     ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
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
  ReadTraining(reader, reader.Section(root, "training"), config.training);
  ReadPlanner(reader, reader.Section(root, "planner"), config.planner);
  ReadRemat(reader, reader.Section(root, "remat"), config.remat);
  config.remat.alignment = config.planner.alignment;
  if (config.model.name.empty()) {
    std::string stem = std::filesystem::path(src).stem().string();
    config.model.name =
        stem.empty() || stem.front() == '<' ? std::string(ToString(config.model.family)) : stem;
  }
  return config;
}

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
  ReadPlanner(reader, reader.Section(root, "planner"), settings.planner);
  ReadRemat(reader, reader.Section(root, "remat"), settings.remat);
  settings.remat.alignment = settings.planner.alignment;
  return settings;
}

Config LoadConfig(const std::string& path, const std::vector<std::string>& overrides) {
  return ParseConfig(ReadFile(path), path, overrides);
}

}  // namespace roam::gen
