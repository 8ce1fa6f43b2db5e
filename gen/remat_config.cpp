// The remat section of a config (docs/configs.md, "remat"): one subsection per method or
// technique, as remat::RematParams nests them. Each field is described once (its key, how it
// is read, where it goes); the flat keys of earlier configs are refused with where they went.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "baseline/orders.h"
#include "gen/planning_config.h"

namespace roam::gen::detail {
namespace {

using remat::RematParams;

// How one key is read into the params: the node, its path.
using ReadField =
    std::function<void(const Reader&, const YAML::Node&, const std::string&, RematParams&)>;
struct Field {
  std::string key;
  ReadField read;
};

template <typename T, typename Get>
Field Count(std::string key, std::int64_t min, Get get, std::int64_t max = INT32_MAX) {
  return {std::move(key),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, RematParams& p) {
            get(p) = static_cast<T>(r.Integer(v, path, min, max));
          }};
}
template <typename Get>
Field Int(std::string key, std::int64_t min, Get get, std::int64_t max = INT32_MAX) {
  return Count<int>(std::move(key), min, get, max);
}
template <typename Get>
Field Int64(std::string key, std::int64_t min, Get get) {
  return Count<std::int64_t>(std::move(key), min, get, kMaxBytes);
}
template <typename Get>
Field NonNegative(std::string key, Get get) {
  return {std::move(key), [=](const Reader& r, const YAML::Node& v, const std::string& path,
                              RematParams& p) { get(p) = r.NonNegative(v, path); }};
}
template <typename Get>
Field Flag(std::string key, Get get) {
  return {std::move(key), [=](const Reader& r, const YAML::Node& v, const std::string& path,
                              RematParams& p) { get(p) = r.Bool(v, path); }};
}

std::string List(std::span<const std::string_view> names) {
  std::string list;
  for (std::string_view n : names) list += (list.empty() ? "" : ", ") + std::string(n);
  return list;
}

std::string OneOf(const Reader& r, const YAML::Node& v, const std::string& path,
                  std::span<const std::string_view> names, const char* what) {
  const std::string text = r.Scalar(v, path, what);
  if (std::find(names.begin(), names.end(), text) == names.end())
    r.Fail(path, v, "must be one of " + List(names) + ", got " + text);
  return text;
}
template <typename Get>
Field Name(std::string key, std::span<const std::string_view> names, const char* what, Get get) {
  return {std::move(key), [=](const Reader& r, const YAML::Node& v, const std::string& path,
                              RematParams& p) { get(p) = OneOf(r, v, path, names, what); }};
}

template <typename Get>
Field Numbers(std::string key, Get get) {
  return {std::move(key),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, RematParams& p) {
            if (!v.IsSequence() || v.size() == 0)
              r.Fail(path, v, "must be a non-empty list of numbers, e.g. [0, 0.5, 1]");
            std::vector<double> values;
            for (size_t i = 0; i < v.size(); ++i)
              values.push_back(r.NonNegative(v[i], path + "[" + std::to_string(i) + "]"));
            get(p) = values;
          }};
}
// A list of names (possibly empty), each one of names.
template <typename Get>
Field Names(std::string key, std::span<const std::string_view> names, const char* what,
            const char* example, Get get) {
  return {std::move(key),
          [=](const Reader& r, const YAML::Node& v, const std::string& path, RematParams& p) {
            if (!v.IsSequence()) r.Fail(path, v, std::string("must be a list of ") + example);
            std::vector<std::string> values;
            for (size_t i = 0; i < v.size(); ++i)
              values.push_back(OneOf(r, v[i], path + "[" + std::to_string(i) + "]", names, what));
            get(p) = values;
          }};
}

// Subsections and their fields, in the order of remat/params.h.
const std::vector<std::pair<std::string, std::vector<Field>>>& Sections() {
  static const auto* sections = new std::vector<std::pair<std::string, std::vector<Field>>>{
      {"rule",
       {Flag(
            "rng_state_kept", [](RematParams & p) -> auto& { return p.rule.rng_state_kept; }),
        Flag(
            "state_update_skipped",
            [](RematParams & p) -> auto& { return p.rule.state_update_skipped; })}},
      {"best",
       {Names(
            "build", remat::kBuilderNames, "a builder", "builders, e.g. [greedy, lookahead]",
            [](RematParams & p) -> auto& { return p.best.build; }),
        Names(
            "improve", remat::kImproverNames, "an improver", "improvers, e.g. [witness, ilp]",
            [](RematParams & p) -> auto& { return p.best.improve; })}},
      {"sweep",
       {Names(
            "build", remat::kBuilderNames, "a builder", "builders, e.g. [greedy, lookahead]",
            [](RematParams & p) -> auto& { return p.sweep.build; }),
        Names(
            "improve", remat::kImproverNames, "an improver", "improvers, e.g. [witness, ilp]",
            [](RematParams & p) -> auto& { return p.sweep.improve; })}},
      {"greedy",
       {Int(
            "max_steps", 0, [](RematParams & p) -> auto& { return p.greedy.max_steps; }),
        Int(
            "stall_steps", 1, [](RematParams & p) -> auto& { return p.greedy.stall_steps; }),
        Int(
            "max_chain", 1, [](RematParams & p) -> auto& { return p.greedy.max_chain; }),
        Name(
            "score", remat::kGreedyScores, "a score name",
            [](RematParams & p) -> auto& { return p.greedy.score; }),
        Flag(
            "count_siblings", [](RematParams & p) -> auto& { return p.greedy.count_siblings; }),
        Flag(
            "copy_before_writes",
            [](RematParams & p) -> auto& { return p.greedy.copy_before_writes; }),
        Int(
            "prune_attempts", 0, [](RematParams & p) -> auto& { return p.greedy.prune_attempts; }),
        Int(
            "swap_attempts", 0, [](RematParams & p) -> auto& { return p.greedy.swap_attempts; }),
        Int(
            "swap_repair_steps", 0,
            [](RematParams & p) -> auto& { return p.greedy.swap_repair_steps; })}},
      {"checkpoint",
       {NonNegative(
            "max_segments_factor",
            [](RematParams & p) -> auto& { return p.checkpoint.max_segments_factor; }),
        Name(
            "cuts", remat::kCheckpointCuts, "a cut rule",
            [](RematParams & p) -> auto& { return p.checkpoint.cuts; })}},
      {"lookahead",
       {Numbers(
            "exponents", [](RematParams & p) -> auto& { return p.lookahead.exponents; }),
        Numbers(
            "target_slacks", [](RematParams & p) -> auto& { return p.lookahead.target_slacks; }),
        Int(
            "target_retries", 0,
            [](RematParams & p) -> auto& { return p.lookahead.target_retries; }),
        Int(
            "hints", 0, [](RematParams & p) -> auto& { return p.lookahead.hints; }),
        Int(
            "refine_attempts", 0,
            [](RematParams & p) -> auto& { return p.lookahead.refine_attempts; }),
        Int(
            "max_computations_factor", 1,
            [](RematParams & p) -> auto& { return p.lookahead.max_computations_factor; })}},
      {"blocks",
       {Int(
            "rounds", 0, [](RematParams & p) -> auto& { return p.blocks.rounds; }),
        Int(
            "group_ops", 1, [](RematParams & p) -> auto& { return p.blocks.group_ops; }),
        Int(
            "split_steps", 1, [](RematParams & p) -> auto& { return p.blocks.split_steps; }),
        Int(
            "max_candidates", 1, [](RematParams & p) -> auto& { return p.blocks.max_candidates; }),
        Int64(
            "search_nodes", 1, [](RematParams & p) -> auto& { return p.blocks.search_nodes; }),
        Int(
            "verifications", 1, [](RematParams & p) -> auto& { return p.blocks.verifications; })}},
      {"blocks_dp",
       {Int(
            "group_ops", 0, [](RematParams & p) -> auto& { return p.blocks_dp.group_ops; }),
        Int(
            "targets", 0, [](RematParams & p) -> auto& { return p.blocks_dp.targets; }, 16),
        Int(
            "retries", 0, [](RematParams & p) -> auto& { return p.blocks_dp.retries; }),
        Int(
            "candidates", 1, [](RematParams & p) -> auto& { return p.blocks_dp.candidates; }),
        {"max_crossing",
         [](const Reader& r, const YAML::Node& v, const std::string& path, RematParams& p) {
           p.blocks_dp.max_crossing = r.Number(v, path);
           if (p.blocks_dp.max_crossing < 0.0 || p.blocks_dp.max_crossing > 1.0)
             r.Fail(path, v, "must be in [0, 1], got " + v.Scalar());
         }},
        Flag(
            "polish", [](RematParams & p) -> auto& { return p.blocks_dp.polish; }),
        Int64(
            "quantum", 0, [](RematParams & p) -> auto& { return p.blocks_dp.quantum; })}},
      {"overhead_bound",
       {Int(
            "cuts", 0, [](RematParams & p) -> auto& { return p.overhead_bound.cuts; }),
        Int64(
            "max_lp_iterations", 0,
            [](RematParams & p) -> auto& { return p.overhead_bound.max_lp_iterations; }),
        Int64(
            "max_nodes", 0, [](RematParams & p) -> auto& { return p.overhead_bound.max_nodes; }),
        NonNegative(
            "time_limit_s", [](RematParams & p) -> auto& { return p.overhead_bound.time_limit_s; }),
        Flag(
            "in_sweep", [](RematParams & p) -> auto& { return p.overhead_bound.in_sweep; })}},
      {"ilp",
       {Int(
            "max_ops", 0, [](RematParams & p) -> auto& { return p.ilp.max_ops; }),
        Int(
            "max_computations", 1, [](RematParams & p) -> auto& { return p.ilp.max_computations; }),
        Int(
            "window_stages", 1, [](RematParams & p) -> auto& { return p.ilp.window_stages; }),
        Int64(
            "window_max_nodes", 0, [](RematParams & p) -> auto& { return p.ilp.window_max_nodes; }),
        Int(
            "window_sweeps", 0, [](RematParams & p) -> auto& { return p.ilp.window_sweeps; }),
        NonNegative(
            "window_time_limit_s",
            [](RematParams & p) -> auto& { return p.ilp.window_time_limit_s; }),
        Int64(
            "max_lp_iterations", 0,
            [](RematParams & p) -> auto& { return p.ilp.max_lp_iterations; }),
        Int64(
            "max_nodes", 0, [](RematParams & p) -> auto& { return p.ilp.max_nodes; })}},
      {"fit",
       {Name(
            "by", remat::kFitBy, "what the budget bounds",
            [](RematParams & p) -> auto& { return p.fit.by; }),
        Int(
            "retries", 0, [](RematParams & p) -> auto& { return p.fit.retries; }),
        NonNegative(
            "search_time_limit_s",
            [](RematParams & p) -> auto& { return p.fit.search_time_limit_s; }),
        Int64(
            "search_max_nodes", 0, [](RematParams & p) -> auto& { return p.fit.search_max_nodes; }),
        Flag(
            "search_wide", [](RematParams & p) -> auto& { return p.fit.search_wide; }),
        Names(
            "fallback_base_orders", OrderNames(), "an order name", "order names, e.g. [xla-list]",
            [](RematParams & p) -> auto& { return p.fit.fallback_base_orders; }),
        Int(
            "long_chain", 0, [](RematParams & p) -> auto& { return p.fit.long_chain; }),
        Names(
            "alone", remat::kBuilderNames, "a builder", "builders, e.g. [lookahead]",
            [](RematParams & p) -> auto& { return p.fit.alone; })}},
  };
  return *sections;
}

// The flat keys of earlier configs (remat.greedy_max_steps, ...), and where they went.
const std::vector<std::pair<std::string, std::string>>& MovedKeys() {
  static const auto* moved = [] {
    auto* m = new std::vector<std::pair<std::string, std::string>>;
    auto nest = [&](const std::string& prefix, const std::string& section,
                    std::initializer_list<const char*> keys) {
      for (const char* k : keys) m->push_back({prefix + k, "remat." + section + "." + k});
    };
    nest("greedy_", "greedy",
         {"max_steps", "stall_steps", "max_chain", "score", "count_siblings", "copy_before_writes",
          "prune_attempts", "swap_attempts", "swap_repair_steps"});
    nest("checkpoint_", "checkpoint", {"max_segments_factor", "cuts"});
    nest("blocks_", "blocks",
         {"rounds", "group_ops", "split_steps", "max_candidates", "search_nodes", "verifications"});
    nest("blocks_dp_", "blocks_dp",
         {"group_ops", "targets", "retries", "candidates", "max_crossing", "polish", "quantum"});
    nest("overhead_bound_", "overhead_bound", {"cuts", "time_limit_s", "in_sweep"});
    nest("ilp_", "ilp", {"max_ops", "max_computations", "window_stages", "window_time_limit_s"});
    nest("lookahead_", "lookahead",
         {"exponents", "target_slacks", "target_retries", "hints", "refine_attempts",
          "max_computations_factor"});
    nest("layout_", "fit", {"retries"});
    nest("layout_", "fit", {"search_time_limit_s", "search_max_nodes", "search_wide"});
    m->push_back({"fallback_base_orders", "remat.fit.fallback_base_orders"});
    m->push_back({"greedy_long_chain", "remat.fit.long_chain"});
    m->push_back({"blocks_in_sweep", "remat.sweep.improve (list blocks and blocks-dp there)"});
    m->push_back({"blocks_dp_in_best", "remat.best.improve (list blocks-dp there)"});
    m->push_back({"witness_in_best", "remat.best.improve (list witness there)"});
    return m;
  }();
  return *moved;
}

}  // namespace

void ReadRemat(const Reader& r, const YAML::Node& node, remat::RematParams& p) {
  for (const auto& [old_key, now] : MovedKeys())
    if (node[old_key].IsDefined()) r.Fail("remat." + old_key, node[old_key], "has moved to " + now);
  std::vector<std::string> keys = {"method", "time_limit_s", "base_order"};
  for (const auto& [section, fields] : Sections()) keys.push_back(section);
  r.CheckKeys(node, "remat", keys);
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string path = "remat." + key;
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    if (key == "method") {
      p.method = OneOf(r, v, path, remat::kMethodNames, "a method name");
    } else if (key == "time_limit_s") {
      p.time_limit_s = r.NonNegative(v, path);
    } else if (key == "base_order") {
      p.base_order = OneOf(r, v, path, OrderNames(), "an order name");
    } else {
      for (const auto& [section, fields] : Sections()) {
        if (section != key) continue;
        std::vector<std::string> names;
        for (const Field& f : fields) names.push_back(f.key);
        r.Subsection(v, path, names);
        for (auto jt = v.begin(); jt != v.end(); ++jt) {
          const std::string k = jt->first.Scalar();
          for (const Field& f : fields)
            if (f.key == k) f.read(r, jt->second, path + "." + k, p);
        }
      }
    }
  }
}

}  // namespace roam::gen::detail
