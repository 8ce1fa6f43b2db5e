// The remat section of a config (docs/configs.md, "remat"): remat::RematParams
// (remat/params.h) field by field, one subsection per method or technique as it nests them.
// The flat keys of earlier configs are refused with where they went.
#include <cstdint>
#include <initializer_list>

#include "baseline/orders.h"
#include "config/field_makers.h"
#include "core/bytes.h"

namespace roam::config {

using namespace detail;  // NOLINT(build/namespaces): the makers

std::vector<Field>* MakeRematFields();

const std::vector<Field>& RematFields() {
  static const std::vector<Field>* fields = MakeRematFields();
  return *fields;
}

std::vector<Field>* MakeRematFields() {
  auto* fields = new std::vector<Field>{
      Name(
          "remat.method", remat::kMethodNames, "a method name",
          "best (the preset remat.best) or one method by name",
          [](auto& p) -> auto& { return p.remat.method; }),
      Number(
          "remat.time_limit_s", 0.0, kInf,
          "wall-clock cap on the whole run (searches are bounded by work); 0 = none",
          [](auto& p) -> auto& { return p.remat.time_limit_s; }),
      Name(
          "remat.base_order", OrderNames(), "an order name",
          "the order the no-remat peak and every method start from",
          [](auto& p) -> auto& { return p.remat.base_order; }),
      Names(
          "remat.start_orders", OrderNames(), "an order name", "order names, e.g. [program]",
          "best also runs from those below base_order's peak; [] = off",
          [](auto& p) -> auto& { return p.remat.start_orders; }),
      Flag(
          "remat.start_ties", "best also runs from start_orders tying base_order's peak",
          [](auto& p) -> auto& { return p.remat.start_ties; }),
      Names(
          "remat.update_placements", remat::kUpdatePlacements, "a placement",
          "placements, e.g. [when-ready, scheduled]",
          "weight updates in each start order: the first not raising its peak; [] = as given",
          [](auto& p) -> auto& { return p.remat.update_placements; }),
      Flag(
          "remat.start_as_given",
          "best also runs from the base order as given where its updates were placed",
          [](auto& p) -> auto& { return p.remat.start_as_given; }),
      Flag(
          "remat.rule.rng_state_kept",
          "recompute random ops: the runtime restores their RNG state for the copy",
          [](auto& p) -> auto& { return p.remat.rule.rng_state_kept; }),
      Flag(
          "remat.rule.state_update_skipped",
          "recompute a batch norm updating its statistics, the copy without the update",
          [](auto& p) -> auto& { return p.remat.rule.state_update_skipped; }),
      Names(
          "remat.best.build", remat::kBuilderNames, "a builder",
          "builders, e.g. [greedy, lookahead]", "best's builders, the cheapest schedule kept",
          [](auto& p) -> auto& { return p.remat.best.build; }),
      Names(
          "remat.best.improve", remat::kImproverNames, "an improver",
          "improvers, e.g. [witness, ilp]", "best's improvers, applied in turn to each pick",
          [](auto& p) -> auto& { return p.remat.best.improve; }),
      Int(
          "remat.best.picks", 1, kMaxInt, "builders' schedules the improvers run from, best first",
          [](auto& p) -> auto& { return p.remat.best.picks; }),
      Names(
          "remat.sweep.build", remat::kBuilderNames, "a builder",
          "builders, e.g. [greedy, lookahead]", "what --sweep --method best builds per point",
          [](auto& p) -> auto& { return p.remat.sweep.build; }),
      Names(
          "remat.sweep.improve", remat::kImproverNames, "an improver",
          "improvers, e.g. [witness, ilp]", "... and improves with",
          [](auto& p) -> auto& { return p.remat.sweep.improve; }),
      Int(
          "remat.greedy.max_steps", 0, kMaxInt, "most recomputations the greedy adds",
          [](auto& p) -> auto& { return p.remat.greedy.max_steps; }),
      Int(
          "remat.greedy.stall_steps", 1, kMaxInt,
          "gives up after this many steps leaving the lowest peak unchanged",
          [](auto& p) -> auto& { return p.remat.greedy.stall_steps; }),
      Int(
          "remat.greedy.max_chain", 1, kMaxInt, "most ops one eviction may recompute",
          [](auto& p) -> auto& { return p.remat.greedy.max_chain; }),
      Name(
          "remat.greedy.score", remat::kGreedyScores, "a score name",
          "ranking per unit of recompute cost: log, peak or lifetime",
          [](auto& p) -> auto& { return p.remat.greedy.score; }),
      Flag(
          "remat.greedy.count_siblings",
          "a candidate also counts the other storages its copies free at the peak",
          [](auto& p) -> auto& { return p.remat.greedy.count_siblings; }),
      Flag(
          "remat.greedy.copy_before_writes",
          "a copy runs before an in-place write of what it reads, rather than dropped",
          [](auto& p) -> auto& { return p.remat.greedy.copy_before_writes; }),
      Int(
          "remat.greedy.prune_attempts", 0, kMaxInt,
          "recomputations tried for removal once within the budget",
          [](auto& p) -> auto& { return p.remat.greedy.prune_attempts; }),
      Int(
          "remat.greedy.swap_attempts", 0, kMaxInt, "local search drops tried; 0 = off",
          [](auto& p) -> auto& { return p.remat.greedy.swap_attempts; }),
      Int(
          "remat.greedy.swap_repair_steps", 0, kMaxInt, "most recomputations one repair adds",
          [](auto& p) -> auto& { return p.remat.greedy.swap_repair_steps; }),
      Flag(
          "remat.greedy.hold_inputs",
          "once stalled, also evictions that hold their freed inputs instead of a chain",
          [](auto& p) -> auto& { return p.remat.greedy.hold_inputs; }),
      Flag(
          "remat.greedy.hold_descent",
          "with hold_inputs, also a descent holding inputs from its first step, the better kept",
          [](auto& p) -> auto& { return p.remat.greedy.hold_descent; }),
      Number(
          "remat.checkpoint.max_segments_factor", 0.0, kInf,
          "segment counts tried, up to this multiple of sqrt(forward ops)",
          [](auto& p) -> auto& { return p.remat.checkpoint.max_segments_factor; }),
      Name(
          "remat.checkpoint.cuts", remat::kCheckpointCuts, "a cut rule",
          "where segments are cut: insensitive, ops or both",
          [](auto& p) -> auto& { return p.remat.checkpoint.cuts; }),
      Numbers(
          "remat.lookahead.exponents", 0.0, kInf, "span exponents of its drop score",
          [](auto& p) -> auto& { return p.remat.lookahead.exponents; }),
      Numbers(
          "remat.lookahead.target_slacks", 0.0, kInf,
          "targets above the budget (fractions) simulated",
          [](auto& p) -> auto& { return p.remat.lookahead.target_slacks; }),
      Int(
          "remat.lookahead.target_retries", 0, kMaxInt,
          "reruns of a simulation found over budget, the target lowered",
          [](auto& p) -> auto& { return p.remat.lookahead.target_retries; }),
      Int(
          "remat.lookahead.hints", 0, kMaxInt, "reruns holding dropped inputs, per simulation",
          [](auto& p) -> auto& { return p.remat.lookahead.hints; }),
      Int(
          "remat.lookahead.refine_attempts", 0, kMaxInt, "protections tried in its refinement",
          [](auto& p) -> auto& { return p.remat.lookahead.refine_attempts; }),
      Int(
          "remat.lookahead.max_computations_factor", 1, kMaxInt,
          "a simulation gives up after this many computations per op",
          [](auto& p) -> auto& { return p.remat.lookahead.max_computations_factor; }),
      Flag(
          "remat.lookahead.whole_graph",
          "also drops values behind views, later in-place writes and the loss",
          [](auto& p) -> auto& { return p.remat.lookahead.whole_graph; }),
      Int(
          "remat.blocks.rounds", 0, kMaxInt, "block pass sweeps over the groups; 0 = off",
          [](auto& p) -> auto& { return p.remat.blocks.rounds; }),
      Int(
          "remat.blocks.group_ops", 1, kMaxInt, "forward ops per group of blocks",
          [](auto& p) -> auto& { return p.remat.blocks.group_ops; }),
      Int(
          "remat.blocks.split_steps", 1, kMaxInt, "steps at which candidates are collected",
          [](auto& p) -> auto& { return p.remat.blocks.split_steps; }),
      Int(
          "remat.blocks.max_candidates", 1, kMaxInt, "candidates per group",
          [](auto& p) -> auto& { return p.remat.blocks.max_candidates; }),
      Int(
          "remat.blocks.search_nodes", 1, kMaxBytes, "branch-and-bound nodes per group",
          [](auto& p) -> auto& { return p.remat.blocks.search_nodes; }),
      Int(
          "remat.blocks.verifications", 1, kMaxInt, "covers per group checked by evaluation",
          [](auto& p) -> auto& { return p.remat.blocks.verifications; }),
      Int(
          "remat.blocks_dp.group_ops", 0, kMaxInt, "budget split: forward ops per group; 0 = off",
          [](auto& p) -> auto& { return p.remat.blocks_dp.group_ops; }),
      Int(
          "remat.blocks_dp.targets", 0, 16, "a group's options: subsets of this many evictions",
          [](auto& p) -> auto& { return p.remat.blocks_dp.targets; }),
      Int(
          "remat.blocks_dp.retries", 0, kMaxInt, "runs of its dynamic programme",
          [](auto& p) -> auto& { return p.remat.blocks_dp.retries; }),
      Int(
          "remat.blocks_dp.candidates", 1, kMaxInt, "combinations per run, verified in turn",
          [](auto& p) -> auto& { return p.remat.blocks_dp.candidates; }),
      Number(
          "remat.blocks_dp.max_crossing", 0.0, 1.0,
          "gives up when more than this fraction of groups do not nest",
          [](auto& p) -> auto& { return p.remat.blocks_dp.max_crossing; }),
      Int(
          "remat.blocks_dp.max_measured_steps", 0, kMaxBytes,
          "gives up once its options were measured on this many steps in all; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.blocks_dp.max_measured_steps; }),
      Int(
          "remat.blocks_dp.max_transitions", 0, kMaxBytes,
          "its programme stops after weighing this many (state, option) pairs; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.blocks_dp.max_transitions; }),
      Flag(
          "remat.blocks_dp.polish", "its schedule is polished by the greedy's prune and swap",
          [](auto& p) -> auto& { return p.remat.blocks_dp.polish; }),
      Int(
          "remat.blocks_dp.quantum", 0, kMaxBytes,
          "bytes kept off rounded to this; 0 = budget/4096",
          [](auto& p) -> auto& { return p.remat.blocks_dp.quantum; }),
      Int(
          "remat.overhead_bound.cuts", 0, kMaxInt, "compute lower bound: most cuts; 0 = off",
          [](auto& p) -> auto& { return p.remat.overhead_bound.cuts; }),
      Int(
          "remat.overhead_bound.chain_cuts", 0, kMaxInt,
          "cuts on one chain in one MILP; 0 or 1 = off",
          [](auto& p) -> auto& { return p.remat.overhead_bound.chain_cuts; }),
      Int(
          "remat.overhead_bound.chain_pool", 1, kMaxInt,
          "candidates on the chain its cuts are spread over",
          [](auto& p) -> auto& { return p.remat.overhead_bound.chain_pool; }),
      Int(
          "remat.overhead_bound.chain_max_nodes", 0, kMaxBytes,
          "branch-and-bound nodes of the chain's MILP; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.overhead_bound.chain_max_nodes; }),
      Int(
          "remat.overhead_bound.chain_max_columns", 0, kMaxBytes,
          "the chain is skipped above this many MILP columns; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.overhead_bound.chain_max_columns; }),
      Int(
          "remat.overhead_bound.max_lp_iterations", 0, kMaxBytes,
          "simplex iterations per LP; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.overhead_bound.max_lp_iterations; }),
      Int(
          "remat.overhead_bound.max_nodes", 0, kMaxBytes,
          "branch-and-bound nodes of the best cut's MILP; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.overhead_bound.max_nodes; }),
      Number(
          "remat.overhead_bound.time_limit_s", 0.0, kInf, "seconds it may take in all (a cap)",
          [](auto& p) -> auto& { return p.remat.overhead_bound.time_limit_s; }),
      Number(
          "remat.overhead_bound.time_share", 0.01, 1.0,
          "the most of the plan's time left it may take, so that the plan keeps the rest",
          [](auto& p) -> auto& { return p.remat.overhead_bound.time_share; }),
      Flag(
          "remat.overhead_bound.in_sweep", "whether --sweep computes it at every point",
          [](auto& p) -> auto& { return p.remat.overhead_bound.in_sweep; }),
      Flag(
          "remat.witness.at_retries",
          "whether best's witness also runs at a fit retry's lower target, with a bound there",
          [](auto& p) -> auto& { return p.remat.witness.at_retries; }),
      Flag(
          "remat.order_bound.enabled", "whether plans report the in-order lower bound",
          [](auto& p) -> auto& { return p.remat.order_bound.enabled; }),
      Int(
          "remat.order_bound.max_nodes", 1, kMaxBytes,
          "in-order bound: nodes of its branch and bound; 1 = the LP relaxation alone",
          [](auto& p) -> auto& { return p.remat.order_bound.max_nodes; }),
      Int(
          "remat.order_bound.max_lp_iterations", 0, kMaxBytes,
          "in-order bound: simplex iterations over all its nodes; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.order_bound.max_lp_iterations; }),
      Int(
          "remat.order_bound.branch_max_nonzeros", 0, kMaxBytes,
          "in-order bound: only its LP above this many nonzeros; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.order_bound.branch_max_nonzeros; }),
      Int(
          "remat.order_bound.max_nonzeros", 0, kMaxBytes,
          "in-order bound: skipped above this many LP nonzeros; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.order_bound.max_nonzeros; }),
      Number(
          "remat.order_bound.time_limit_s", 0.0, kInf, "in-order bound: seconds (a cap)",
          [](auto& p) -> auto& { return p.remat.order_bound.time_limit_s; }),
      Int(
          "remat.order_bound.input_levels", 0, 4,
          "in-order bound: levels of a copy's inputs held or made again; 0 = none",
          [](auto& p) -> auto& { return p.remat.order_bound.input_levels; }),
      Int(
          "remat.ilp.max_ops", 0, kMaxInt, "graphs with more ops keep the warm start",
          [](auto& p) -> auto& { return p.remat.ilp.max_ops; }),
      Int(
          "remat.ilp.max_computations", 1, kMaxInt, "most computations of one op",
          [](auto& p) -> auto& { return p.remat.ilp.max_computations; }),
      Int(
          "remat.ilp.window_stages", 1, kMaxInt, "stages per window of its neighbourhood search",
          [](auto& p) -> auto& { return p.remat.ilp.window_stages; }),
      Int(
          "remat.ilp.window_max_nodes", 0, kMaxBytes,
          "branch-and-bound nodes one window may take; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.ilp.window_max_nodes; }),
      Int(
          "remat.ilp.window_sweeps", 0, kMaxInt, "sweeps of windows over the base order at most",
          [](auto& p) -> auto& { return p.remat.ilp.window_sweeps; }),
      Number(
          "remat.ilp.window_time_limit_s", 0.0, kInf, "seconds one window may take (a cap)",
          [](auto& p) -> auto& { return p.remat.ilp.window_time_limit_s; }),
      Int(
          "remat.ilp.max_lp_iterations", 0, kMaxBytes,
          "simplex iterations per root LP; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.ilp.max_lp_iterations; }),
      Int(
          "remat.ilp.max_nodes", 0, kMaxBytes,
          "branch-and-bound nodes of the whole MILP; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.ilp.max_nodes; }),
      Int(
          "remat.lns.max_ops", 0, kMaxInt,
          "graphs with more ops keep ruin and recreate's incumbent",
          [](auto& p) -> auto& { return p.remat.lns.max_ops; }),
      Int(
          "remat.lns.rounds", 0, kMaxInt, "ruin-and-recreate rounds; 0 = off",
          [](auto& p) -> auto& { return p.remat.lns.rounds; }),
      Int(
          "remat.lns.ruin_runs", 1, kMaxInt, "most runs of copies one round drops",
          [](auto& p) -> auto& { return p.remat.lns.ruin_runs; }),
      Int(
          "remat.lns.choice_width", 1, kMaxInt,
          "a repair step draws among this many best evictions",
          [](auto& p) -> auto& { return p.remat.lns.choice_width; }),
      Int(
          "remat.lns.repair_steps", 0, kMaxInt, "most recomputations one repair adds",
          [](auto& p) -> auto& { return p.remat.lns.repair_steps; }),
      Number(
          "remat.lns.accept_slack", 0.0, kInf,
          "a round's schedule is kept to go on from where at most this fraction dearer",
          [](auto& p) -> auto& { return p.remat.lns.accept_slack; }),
      Int(
          "remat.lns.layout_max_nodes", 0, kMaxBytes,
          "layout search nodes checking a cheaper schedule's arena; 0 = best-fit and llfb only",
          [](auto& p) -> auto& { return p.remat.lns.layout_max_nodes; }),
      Int(
          "remat.lns.seed", 0, kMaxBytes, "seed of its random draws",
          [](auto& p) -> auto& { return p.remat.lns.seed; }),
      Name(
          "remat.fit.by", remat::kFitBy, "arena or theoretical",
          "what the budget bounds: the laid-out arena, or the theoretical peak",
          [](auto& p) -> auto& { return p.remat.fit.by; }),
      Int(
          "remat.fit.retries", 0, kMaxInt, "reruns at a lower target when the arena misses",
          [](auto& p) -> auto& { return p.remat.fit.retries; }),
      Numbers(
          "remat.fit.retry_steps", 0.0, 1.0,
          "fractions of the arena's excess a retry lowers the target by, one descent each",
          [](auto& p) -> auto& { return p.remat.fit.retry_steps; }),
      Int(
          "remat.fit.refine_retries", 0, kMaxInt,
          "bisections of the targets between a retry that missed and one that fit",
          [](auto& p) -> auto& { return p.remat.fit.refine_retries; }),
      Int(
          "remat.fit.prune.max_trials", 0, kMaxInt,
          "repeats tried for dropping where the plan's layout still fits; 0 = off",
          [](auto& p) -> auto& { return p.remat.fit.prune.max_trials; }),
      Ints(
          "remat.fit.prune.repair_margins", 0, kMaxInt, "[0, 10, 20, 40, 80]",
          "steps each side of a longer-lived buffer that finds no place: one window searched at "
          "the budget per margin, in turn; [] = none",
          [](auto& p) -> auto& { return p.remat.fit.prune.repair_margins; }),
      Int(
          "remat.fit.prune.repack_windows", 0, kMaxInt,
          "repacking windows per trial where no repair window fits; 0 = none",
          [](auto& p) -> auto& { return p.remat.fit.prune.repack_windows; }),
      Int(
          "remat.fit.prune.max_windows", 0, kMaxInt,
          "repacking windows one prune (one per fit loop) may solve in all",
          [](auto& p) -> auto& { return p.remat.fit.prune.max_windows; }),
      Number(
          "remat.fit.search_time_limit_s", 0.0, kInf,
          "seconds of layout search per attempt (a cap)",
          [](auto& p) -> auto& { return p.remat.fit.search_time_limit_s; }),
      Number(
          "remat.fit.layout_reserve", 0.0, 0.9,
          "share of the time left that each attempt's methods leave for laying out their "
          "schedule before the time limit",
          [](auto& p) -> auto& { return p.remat.fit.layout_reserve; }),
      Int(
          "remat.fit.search_max_nodes", 0, kMaxBytes, "search nodes per attempt; 0 = no limit",
          [](auto& p) -> auto& { return p.remat.fit.search_max_nodes; }),
      Int(
          "remat.fit.search_max_work", 0, kMaxBytes,
          "search work per attempt (buffers and sections visited); 0 = no limit",
          [](auto& p) -> auto& { return p.remat.fit.search_max_work; }),
      Flag(
          "remat.fit.search_wide", "a second, bottom-left search where the first misses",
          [](auto& p) -> auto& { return p.remat.fit.search_wide; }),
      Int(
          "remat.fit.search_wide_max_buffers", 0, kMaxInt,
          "the second search only on layouts of at most this many buffers",
          [](auto& p) -> auto& { return p.remat.fit.search_wide_max_buffers; }),
      Flag(
          "remat.fit.search_at_budget",
          "a search for a layout within the budget alone where the others miss it",
          [](auto& p) -> auto& { return p.remat.fit.search_at_budget; }),
      Int(
          "remat.fit.repack.max_subproblems", 0, kMaxInt,
          "windows of the layout laid out again where the searches miss; 0 = off",
          [](auto& p) -> auto& { return p.remat.fit.repack.max_subproblems; }),
      Int(
          "remat.fit.repack.max_failures_in_a_row", 1, kMaxInt,
          "windows in a row that lower nothing before repacking gives up",
          [](auto& p) -> auto& { return p.remat.fit.repack.max_failures_in_a_row; }),
      Int(
          "remat.fit.repack.max_free_buffers", 1, kMaxInt, "buffers a window frees at most",
          [](auto& p) -> auto& { return p.remat.fit.repack.max_free_buffers; }),
      Int(
          "remat.fit.repack.max_margin_steps", 0, kMaxInt,
          "steps a window widens the chosen buffer's lifetime by, at most, on each side",
          [](auto& p) -> auto& { return p.remat.fit.repack.max_margin_steps; }),
      Int(
          "remat.fit.repack.subproblem_max_nodes", 1, kMaxBytes, "search nodes per window",
          [](auto& p) -> auto& { return p.remat.fit.repack.subproblem_max_nodes; }),
      Int(
          "remat.fit.repack.seed", 0, kMaxBytes, "seed of the windows' choice",
          [](auto& p) -> auto& { return p.remat.fit.repack.seed; }),
      Int(
          "remat.fit.repack_plan_subproblems", 0, kMaxInt,
          "windows repacked in all for one budget's plan, over every layout; 0 = off",
          [](auto& p) -> auto& { return p.remat.fit.repack_plan_subproblems; }),
      Names(
          "remat.fit.fallback_base_orders", OrderNames(), "an order name",
          "order names, e.g. [xla-list]", "best's fallback greedy starts; [] = off",
          [](auto& p) -> auto& { return p.remat.fit.fallback_base_orders; }),
      Names(
          "remat.fit.reorder_orders", OrderNames(), "an order name", "order names, e.g. [program]",
          "orders tried without recomputation first; [] = off",
          [](auto& p) -> auto& { return p.remat.fit.reorder_orders; }),
      Int(
          "remat.fit.long_chain", 0, kMaxInt, "the fallback's long greedy chains; 0 = not",
          [](auto& p) -> auto& { return p.remat.fit.long_chain; }),
      Names(
          "remat.fit.alone", remat::kBuilderNames, "a builder", "builders, e.g. [lookahead]",
          "builders also planned alone where best misses",
          [](auto& p) -> auto& { return p.remat.fit.alone; }),
  };
  InsertAfter(
      *fields, "remat.fit.prune.",
      SearchFields(
          "remat.fit.prune.search.", [](auto& p) -> auto& { return p.remat.fit.prune.search; }));
  InsertAfter(
      *fields, "remat.fit.repack.",
      SearchFields(
          "remat.fit.repack.search.", [](auto& p) -> auto& { return p.remat.fit.repack.search; }));
  return fields;
}

const std::vector<std::pair<std::string, std::string>>& MovedRematKeys() {
  static const auto* moved = [] {
    auto* m = new std::vector<std::pair<std::string, std::string>>;
    auto nest = [&](const std::string& prefix, const std::string& section,
                    std::initializer_list<const char*> keys) {
      for (const char* k : keys)
        m->push_back({"remat." + prefix + k, "remat." + section + "." + k});
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
    m->push_back({"remat.fallback_base_orders", "remat.fit.fallback_base_orders"});
    m->push_back({"remat.greedy_long_chain", "remat.fit.long_chain"});
    m->push_back(
        {"remat.blocks_in_sweep", "remat.sweep.improve (list blocks and blocks-dp there)"});
    m->push_back({"remat.blocks_dp_in_best", "remat.best.improve (list blocks-dp there)"});
    m->push_back({"remat.witness_in_best", "remat.best.improve (list witness there)"});
    return m;
  }();
  return *moved;
}

}  // namespace roam::config
