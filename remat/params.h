// Every setting of `roam remat` in one place (docs/remat.md). A config's remat section has the
// same nesting: remat.method, remat.rule.rng_state_kept, remat.greedy_max_steps, ... (read by
// gen/config.h); command-line flags override single fields.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace roam::remat {

// "greedy", "checkpoint" (Chen et al.'s sqrt(n) segments), "lookahead", "ilp" (MOCCASIN's
// retention intervals), "blocks" (the greedy improved block by block over the subgraph tree),
// "blocks-dp" (the budget split over the chain of blocks), "witness" (seeded by the compute
// bound's MILP), "best" (the cheapest of them); docs/remat.md and remat.h.
inline constexpr std::array<std::string_view, 8> kMethodNames = {
    "best", "greedy", "checkpoint", "lookahead", "ilp", "blocks", "blocks-dp", "witness"};
// RematParams::checkpoint_cuts's values.
inline constexpr std::array<std::string_view, 3> kCheckpointCuts = {"both", "insensitive", "ops"};
// RematParams::greedy_score's values.
inline constexpr std::array<std::string_view, 3> kGreedyScores = {"log", "peak", "lifetime"};

struct RecomputeRule {
  // Ops drawing random numbers (dropout, bernoulli, rand*, normal, ...) are recomputed only
  // when the runtime keeps their RNG state and restores it for the copy, as
  // torch.utils.checkpoint's preserve_rng_state does. Off: roam does not assume it.
  bool rng_state_kept = false;
  // A batch norm in training mode that updates its running statistics (recorded as outputs on
  // their storage, as the PyTorch exporter does) is recomputed without the update: its values
  // come from the batch alone, so the copy computes them again and leaves the statistics as
  // the original left them. The copy has no outputs on the statistics, and a runtime runs it
  // without them (tools/torch_export's runner passes None). Off: such ops are never recomputed.
  bool state_update_skipped = true;
};

struct RematParams {
  std::string method = "best";
  Bytes alignment = kDefaultAlignment;
  double time_limit_s = 60.0;  // for the exact method, over all layout attempts; others are fast
  RecomputeRule rule;
  // Base order the no-remat peak and every method start from (baseline/orders.h names).
  std::string base_order = "heuristic";
  // Greedy: the most recomputations it adds before giving up on a budget.
  int greedy_max_steps = 20000;
  // Greedy: gives up after this many recomputations in a row that left the lowest peak so far
  // unchanged (a plateau of equal peaks takes one per step).
  int greedy_stall_steps = 200;
  // Greedy: the most ops one eviction may recompute, the evicted storage's producers and, for
  // inputs freed before the peak, their producers in turn (a chain).
  int greedy_max_chain = 16;
  // Best's fallback (fallback_base_orders): the greedy is also run with chains of up to this
  // many ops (0 or at most greedy_max_chain: not). On random-layered-100 at 80% chains of 16
  // stall at a peak of 689 (budget 672); of 24 or more reach 670, and 656 from xla-list.
  int greedy_long_chain = 64;
  // Greedy: how candidates are ranked, all per unit of recompute cost (MONeT's and
  // Checkmate's currency: cheap memory-bound ops go before matmuls and convolutions).
  // "log": bytes freed at the peak times log(1 + steps they stay freed); "peak": the bytes
  // alone; "lifetime": the bytes times the steps (the first greedy's rule).
  std::string greedy_score = "log";
  // Greedy: a candidate also counts the other storages its copies free at the peak (outputs
  // of the recomputed ops made by them alone and unused until the copies run).
  bool greedy_count_siblings = true;
  // Greedy: copies run right before the next use of what they recompute, or, when a storage
  // they read is overwritten in place before that use (an optimizer step interleaved with the
  // backward updating a weight), right before that write; off: such candidates are dropped.
  bool greedy_copy_before_writes = true;
  // Greedy: once within the budget, tries dropping this many recomputations, most expensive
  // first, keeping each drop that stays within the budget.
  int greedy_prune_attempts = 200;
  // Greedy: then, a local search: drop one run of copies (dearest first) and repair the peak
  // with greedy recomputations costing less in all, at most this many drops tried (0: off);
  // each repair takes at most greedy_swap_repair_steps recomputations.
  int greedy_swap_attempts = 100;
  int greedy_swap_repair_steps = 50;
  // Checkpoint: segment counts tried, from 1 up to this multiple of sqrt(forward ops).
  double checkpoint_max_segments_factor = 2.0;
  // Checkpoint: where segments are cut. "insensitive": at the forward's memory-insensitive
  // ops (the partition's segment boundaries; Chen et al.'s rule), k segments evenly by the
  // forward bytes between them; "ops": k segments of equal op count (the first rule); "both":
  // every segmentation of either, the cheapest within the budget kept.
  std::string checkpoint_cuts = "both";
  // Block pass (method "blocks", and a phase of "best" before the exact method): sweeps over
  // the groups of consecutive blocks (independent subgraphs of the partition), at most this
  // many (0: off), stopping after a sweep that changed nothing. 1: on GPT-2 XL and ResNet-50
  // further sweeps found nothing more, and each costs as much as the first.
  int blocks_rounds = 1;
  // Block pass: blocks are grouped in forward order until a group holds this many forward ops
  // (ResNet's bottleneck is about 10 blocks of 3-6 ops; a group's recomputations are chosen
  // together, the other groups' held fixed).
  int blocks_group_ops = 24;
  // Block pass: the greedy's evictions inside a group are collected at up to this many steps
  // over the budget (evenly spaced), and the best by the greedy's score kept, at most this
  // many; their cheapest cover of the excess is found by branch and bound of at most
  // blocks_search_nodes nodes, and up to blocks_verifications covers are checked by roam's
  // evaluation (the additive estimate can be short when evictions overlap).
  int blocks_split_steps = 8;
  int blocks_max_candidates = 20;
  std::int64_t blocks_search_nodes = 200000;
  int blocks_verifications = 8;
  // Block pass: whether `best` runs it at every point of a sweep. Off: on GPT-2 XL it would
  // nearly double the sweep's time (72 s of CPU against 41 s) for at most 0.07 points per
  // point; `--sweep --method blocks` runs it.
  bool blocks_in_sweep = false;
  // Budget split (method "blocks-dp", and a phase of "best" after the block pass): groups of
  // consecutive blocks of at least this many forward ops (0: off) get their options measured
  // alone and one option each chosen together by a dynamic programme over the chain.
  int blocks_dp_group_ops = 8;
  // Budget split: a group's options are every subset of its best evictions at the start of
  // its backward, at most this many (2^n subsets; 0: only none and the incumbent's copies).
  int blocks_dp_targets = 8;
  // Budget split: the programme runs at most this often: an assembled schedule over the budget
  // teaches the excess at its groups' steps, and once one fits (or none), the targets are
  // raised (the summary is conservative) by an offset doubling after each cheaper fit.
  int blocks_dp_retries = 8;
  // Budget split: each run of the programme yields up to this many distinct combinations,
  // cheapest first, verified in turn until one fits (its estimate misses interactions
  // beyond neighbouring groups, so a slightly dearer one may fit where the cheapest does not);
  // one that agrees with a miss on the groups where it missed is skipped. 1: on ResNet-50 at
  // one third, 8 and 32 found nothing cheaper (the next combinations differ only in groups
  // away from the excess) and cost 3x and 20x the time.
  int blocks_dp_candidates = 1;
  // Budget split: it gives up before measuring options when more than this fraction of the
  // groups (after the first) outlive an outer group's span, i.e. the chain does not nest
  // (ResNet-50: none; GPT-2 XL: about half, where it found nothing for 9 s).
  double blocks_dp_max_crossing = 0.25;
  // Budget split: whether `best` runs it after the block pass. On: ResNet-50 at one third
  // gains 0.12 points for about 3 s; GPT-2 XL at 50% is given up by the nesting test
  // (blocks_dp_max_crossing) at no measurable cost (perf/RESULTS.md, "The budget split").
  bool blocks_dp_in_best = true;
  // Budget split: its schedule is then polished by the greedy's prune and swap search.
  bool blocks_dp_polish = true;
  // Budget split: the programme's bytes kept off are rounded down to this quantum (0: the
  // budget / 4096), which bounds its states per option to the budget over the quantum; the
  // rounding is conservative (at most one quantum per group).
  std::int64_t blocks_dp_quantum = 0;
  // Compute lower bound (remat.h OverheadLowerBound), reported as lower_bound with every
  // plan: the most cuts it reasons at, the ops with most bytes forced live first (0: off), and
  // the seconds it may take in all (out of time, GLPK's proven bound stands: the LP
  // relaxation's once that is solved, 0 before). 1 cut: on ResNet-50 at one third and GPT-2 XL
  // at half, the most forced op gave the best bound of the four most forced. 2 s: ResNet-50's
  // bound at one third is 14.79% from the LP, 15.02% after 0.5 s of branching, 15.03% after
  // 2 s; GPT-2 XL's LP at half takes about 1 s.
  int overhead_bound_cuts = 1;
  double overhead_bound_time_limit_s = 2.0;
  // Compute lower bound: whether a sweep computes it at every point (up to
  // overhead_bound_time_limit_s each; off, GPT-2 XL's curve stays under a minute).
  bool overhead_bound_in_sweep = false;
  // Witness schedule (method "witness", and a phase of "best" after the budget split): the base
  // order with one copy of each op the compute bound's MILP recomputes after its cut, right
  // before its first use there, then the greedy's descent and polish; kept where cheaper. On:
  // ResNet-50 b32 at one third 15.28% -> 15.09% (bound 15.04%), GPT-2 XL at half 4.897% ->
  // 4.892%, for one greedy descent (the bound is computed once, before the methods). Off where
  // overhead_bound_cuts is 0, and in a sweep unless overhead_bound_in_sweep.
  bool witness_in_best = true;
  // Exact method: graphs with more ops than this keep the warm start (the greedy's answer).
  int ilp_max_ops = 120;
  // At most this many computations of one op (MOCCASIN's C) in the exact method.
  int ilp_max_computations = 2;
  // Exact method: stages per window of its neighbourhood search from the incumbent, and the
  // seconds one window may take.
  int ilp_window_stages = 24;
  double ilp_window_time_limit_s = 5.0;
  // Lookahead: the span exponents of its drop score (estimated recompute cost per byte per
  // step^exponent until the next use) and the targets above the budget (fractions) it
  // simulates, every pair once; the cheapest schedule within budget is refined.
  std::vector<double> lookahead_exponents = {0.0, 0.5, 1.0, 2.0};
  std::vector<double> lookahead_target_slacks = {0.0, 0.01, 0.03};
  // Lookahead: a simulation whose schedule roam's memory model finds over budget is rerun with
  // its target lowered by the excess, at most this often.
  int lookahead_target_retries = 3;
  // Lookahead: where a simulation finds nothing left to drop, it is rerun holding the dropped
  // inputs of the value that would then free most, at most this often per simulation.
  int lookahead_hints = 200;
  // Lookahead: protections tried in its refinement (one simulation each).
  int lookahead_refine_attempts = 200;
  // Lookahead: a simulation gives up after this many computations per op of the graph.
  int lookahead_max_computations_factor = 20;
  // Layout tried on the rewritten graph, then llfb; if the arena still exceeds the budget,
  // the method is rerun with the budget lowered by the excess, at most this often.
  int layout_retries = 4;
  // Seconds of layout search (layout/layout.h) per attempt when best-fit and llfb both miss
  // the schedule's theoretical peak; 0: none.
  double layout_search_time_limit_s = 1.0;
  // ... and at most this many search nodes per attempt (0: no limit): with a node limit and no
  // binding time limit, the plan does not depend on the machine's speed or load.
  std::int64_t layout_search_max_nodes = 0;
  // Where that search leaves the arena over the budget: a second search (same limits) with its
  // bottom-left branching and unallocated floor in groups of any size (layout/layout.h limits
  // them to 1,000 buffers by default, for whole training graphs' sake), before the method is
  // rerun at a lower target. On random-layered-1000 at 80% the default search stops at 921
  // bytes for a schedule whose theoretical peak is 909 (budget 918); this one packs it at 909.
  bool layout_search_wide = true;
  // Best: where the arena of its schedule misses the budget (fragmentation, or a theoretical
  // peak above it), the greedy is run from base_order and from each of these base orders
  // (baseline/orders.h names), with chains of greedy_max_chain and greedy_long_chain ops; their
  // schedules within the budget by the theoretical peak are laid out, cheapest first, and the
  // first whose arena fits is kept (after the retries at lower targets missed). Empty: off. The
  // base order changes which values the greedy evicts and how the rewritten graph packs:
  // random-layered-100 at 80% fits from xla-list (arena 670 of 672) and from no other.
  std::vector<std::string> fallback_base_orders = {"xla-list", "program"};
};

}  // namespace roam::remat
