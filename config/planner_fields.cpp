// The planner section of a config (docs/configs.md, "planner"): OptimizerParams
// (optimizer/params.h) field by field, in its order and nesting. Seconds are `*_s` keys.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/field_makers.h"
#include "core/bytes.h"
#include "layout/layout.h"

namespace roam::config {

using namespace detail;  // NOLINT(build/namespaces): the makers

std::vector<Field>* MakePlannerFields();

const std::vector<Field>& PlannerFields() {
  static const std::vector<Field>* fields = MakePlannerFields();
  return *fields;
}

std::vector<Field>* MakePlannerFields() {
  auto* fields = new std::vector<Field>{
      Choice(
          "planner.mode",
          std::vector<std::pair<OptimizeMode, std::string_view>>{{OptimizeMode::kRoam, "roam"},
                                                                 {OptimizeMode::kModel, "model"}},
          "optimize's mode: roam (partition, leaves, merge) or model (whole-graph ILPs)",
          [](auto& p) -> auto& { return p.planner.mode; }),
      Choice(
          "planner.streams",
          std::vector<std::pair<Streams, std::string_view>>{{Streams::kSingle, "single"},
                                                            {Streams::kMulti, "multi"}},
          "optimize's scenario: single (one op per step) or multi (several independent ops "
          "per step, plans with steps)",
          [](auto& p) -> auto& { return p.planner.streams; }),
      Int(
          "planner.max_concurrency", 0, kMaxInt,
          "multi-stream: the most ops one step may run; 0 = unbounded, as in MODeL",
          [](auto& p) -> auto& { return p.planner.max_concurrency; }),
      Int(
          "planner.threads", 0, kMaxThreads, "worker threads for leaf solves; 0 = all cores",
          [](auto& p) -> auto& { return p.planner.threads; }),
      Number(
          "planner.time_limit_s", 0.0, kInf, "seconds for the whole optimization; 0 = none",
          [](auto& p) -> auto& { return p.planner.time_limit; }),
      Int(
          "planner.alignment", 1, kMaxAlignment,
          "bytes; sizes and offsets are rounded to it (remat's arena too)",
          [](auto& p) -> auto& { return p.planner.alignment; }),
      Flag(
          "planner.bound_shortcut",
          "send a leaf to the order ILP only when it can lower the whole graph's peak",
          [](auto& p) -> auto& { return p.planner.bound_shortcut; }),
      Flag(
          "planner.best_update_placement",
          "partition with every weight-update placement, keep the lowest peak",
          [](auto& p) -> auto& { return p.planner.best_update_placement; }),
      Flag(
          "planner.defer_update_tails",
          "also start from every baseline order with the updates' tails after the peak",
          [](auto& p) -> auto& { return p.planner.defer_update_tails; }),
      Number(
          "planner.solver_overshoot_s", 0.0, kInf,
          "seconds of the run kept back from GLPK; no leaf ILP starts with less left",
          [](auto& p) -> auto& { return p.planner.solver_overshoot; }),
      Int(
          "planner.partition.node_limit", 1, kMaxInt, "most ops in one leaf subgraph",
          [](auto& p) -> auto& { return p.planner.partition.node_limit; }),
      Number(
          "planner.partition.alpha", 0.0, kInf,
          "ROAM's weight-update memory coefficient (eq. 6); 0 = inferred from the optimizer",
          [](auto& p) -> auto& { return p.planner.partition.alpha; }),
      Number(
          "planner.partition.delay_radius", 0.0, kInf,
          "delay an update whose tensors exceed this times the average tensor size",
          [](auto& p) -> auto& { return p.planner.partition.delay_radius; }),
      Choice(
          "planner.partition.update_placement",
          std::vector<std::pair<UpdatePlacement, std::string_view>>{
              {UpdatePlacement::kScheduled, "scheduled"},
              {UpdatePlacement::kWhenReady, "when-ready"},
              {UpdatePlacement::kAtEnd, "at-end"},
              {UpdatePlacement::kSplit, "split"}},
          "where weight updates go: scheduled (ROAM eqs 4-6), when-ready, at-end or split",
          [](auto& p) -> auto& { return p.planner.partition.update_placement; }),
      Flag(
          "planner.leaf_order.enabled", "solve leaf orders with the order ILP",
          [](auto& p) -> auto& { return p.planner.leaf_order.enabled; }),
      Int(
          "planner.leaf_order.max_lp_iterations", 0, kMaxBytes,
          "simplex iterations the order ILP may spend on one leaf; 0 = no limit",
          [](auto& p) -> auto& { return p.planner.leaf_order.max_lp_iterations; }),
      Int(
          "planner.leaf_order.max_lp_work", 0, kMaxBytes,
          "simplex iterations times the ILP's nonzeros the order ILP may spend on one leaf; 0 = "
          "no limit",
          [](auto& p) -> auto& { return p.planner.leaf_order.max_lp_work; }),
      Number(
          "planner.leaf_order.time_limit_s", 0.0, kInf,
          "seconds the order ILP may spend on one leaf: an outer cap",
          [](auto& p) -> auto& { return p.planner.leaf_order.time_limit; }),
      Flag(
          "planner.leaf_order.contract", "merge ops that cannot change the peak into a neighbour",
          [](auto& p) -> auto& { return p.planner.leaf_order.contract; }),
      Flag(
          "planner.leaf_order.symmetry_breaking", "order interchangeable ops by id",
          [](auto& p) -> auto& { return p.planner.leaf_order.symmetry_breaking; }),
      Int(
          "planner.leaf_order.max_nonzeros", 1, kMaxBytes,
          "larger leaf ILPs are not built; the warm start stands",
          [](auto& p) -> auto& { return p.planner.leaf_order.max_nonzeros; }),
      Flag(
          "planner.leaf_layout.enabled", "solve each leaf's layout, activations at the bottom",
          [](auto& p) -> auto& { return p.planner.leaf_layout.enabled; }),
      Choice(
          "planner.leaf_layout.engine",
          std::vector<std::pair<LayoutEngine, std::string_view>>{{LayoutEngine::kSearch, "search"},
                                                                 {LayoutEngine::kIlp, "ilp"}},
          "search (layout/) or ilp (GLPK)",
          [](auto& p) -> auto& { return p.planner.leaf_layout.engine; }),
      Number(
          "planner.leaf_layout.time_limit_s", 0.0, kInf,
          "seconds for one leaf's layout: an outer cap",
          [](auto& p) -> auto& { return p.planner.leaf_layout.time_limit; }),
      Int(
          "planner.leaf_layout.max_storages", 0, kMaxInt,
          "leaves owning more storages keep the greedy layout",
          [](auto& p) -> auto& { return p.planner.leaf_layout.max_storages; }),
      Int(
          "planner.leaf_layout.max_nodes", 0, kMaxBytes,
          "search nodes for one leaf's layout; 0 = only the time limit",
          [](auto& p) -> auto& { return p.planner.leaf_layout.max_nodes; }),
      Int(
          "planner.leaf_layout.max_lp_work", 0, kMaxBytes,
          "engine ilp: simplex iterations times nonzeros for one leaf's layout; 0 = only the "
          "time limit",
          [](auto& p) -> auto& { return p.planner.leaf_layout.max_lp_work; }),
      Flag(
          "planner.final_layout.enabled",
          "a last whole-graph layout search when the layout is above max-live",
          [](auto& p) -> auto& { return p.planner.final_layout.enabled; }),
      Number(
          "planner.final_layout.time_limit_s", 0.0, kInf, "seconds for it: an outer cap",
          [](auto& p) -> auto& { return p.planner.final_layout.time_limit; }),
      Int(
          "planner.final_layout.max_nodes", 0, kMaxBytes,
          "search nodes for it; 0 = only the time limit",
          [](auto& p) -> auto& { return p.planner.final_layout.max_nodes; }),
      Int(
          "planner.final_layout.max_work", 0, kMaxBytes,
          "buffers and sections its search may visit; 0 = no limit",
          [](auto& p) -> auto& { return p.planner.final_layout.max_work; }),
      Flag(
          "planner.merge.slide_down", "after stacking, move buffers down into gaps",
          [](auto& p) -> auto& { return p.planner.merge.slide_down; }),
      Flag(
          "planner.merge.search_reassignment",
          "re-place conflicting temporaries by layout search; false: best-fit only",
          [](auto& p) -> auto& { return p.planner.merge.search_reassignment; }),
      Int(
          "planner.merge.search_max_nodes", 0, kMaxBytes, "search nodes for that reassignment",
          [](auto& p) -> auto& { return p.planner.merge.search_max_nodes; }),
      Number(
          "planner.merge.search_time_limit_s", 0.0, kInf, "seconds for it; 0 = none",
          [](auto& p) -> auto& { return p.planner.merge.search_time_limit_s; }),
      Int(
          "planner.merge.search_max_buffers", 0, kMaxInt,
          "skip the search when more buffers are involved",
          [](auto& p) -> auto& { return p.planner.merge.search_max_buffers; }),
      Number(
          "planner.order_share", 0.0, 1.0,
          "model mode: share of the run for the order ILP, the layout ILP gets the rest",
          [](auto& p) -> auto& { return p.planner.order_share; }),
      Int(
          "planner.whole_graph.max_lp_work", 0, kMaxBytes,
          "model mode: simplex iterations times nonzeros each whole-graph ILP may spend; 0 = no "
          "limit",
          [](auto& p) -> auto& { return p.planner.whole_graph.max_lp_work; }),
  };
  InsertAfter(*fields, "planner.leaf_layout.",
              SearchFields(
                  "planner.leaf_layout.search.",
                  [](auto& p) -> auto& { return p.planner.leaf_layout.search; }));
  InsertAfter(*fields, "planner.final_layout.",
              SearchFields(
                  "planner.final_layout.search.",
                  [](auto& p) -> auto& { return p.planner.final_layout.search; }));
  return fields;
}

const std::vector<std::pair<std::string, std::string>>& MovedPlannerKeys() {
  static const auto* moved = new std::vector<std::pair<std::string, std::string>>{
      {"planner.node_limit", "planner.partition.node_limit"},
      {"planner.alpha", "planner.partition.alpha"},
      {"planner.delay_radius", "planner.partition.delay_radius"},
      {"planner.leaf_time_limit", "planner.leaf_order.time_limit_s"},
      {"planner.time_limit", "planner.time_limit_s"},
      {"planner.solver_overshoot", "planner.solver_overshoot_s"},
      {"planner.leaf_order.time_limit", "planner.leaf_order.time_limit_s"},
      {"planner.leaf_layout.time_limit", "planner.leaf_layout.time_limit_s"},
      {"planner.final_layout.time_limit", "planner.final_layout.time_limit_s"},
      {"planner.leaf_layout.bottom_left", "planner.leaf_layout.search.bottom_left"},
      {"planner.final_layout.bottom_left", "planner.final_layout.search.bottom_left"},
  };
  return *moved;
}

}  // namespace roam::config
