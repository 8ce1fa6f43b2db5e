// Every setting of `roam remat` in one place (docs/remat.md), one struct per method or
// technique. A config's remat section has the same nesting: remat.method,
// remat.rule.rng_state_kept, remat.greedy.max_steps, remat.best.improve, ... (read by
// config/remat_fields.cpp); command-line flags override single fields.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"
#include "layout/repack.h"

namespace roam::remat {

// Methods that build a schedule from the base order (docs/remat.md, "Methods"): "greedy",
// "checkpoint" (Chen et al.'s sqrt(n) segments), "lookahead".
inline constexpr std::array<std::string_view, 3> kBuilderNames = {"greedy", "checkpoint",
                                                                  "lookahead"};
// Methods that improve a schedule (the greedy's, when named alone): "blocks" (the block pass
// over the subgraph tree), "blocks-dp" (the budget split over the chain of blocks), "witness"
// (seeded by the compute bound's MILP), "ilp" (MOCCASIN's retention intervals), "lns" (ruin and
// recreate).
inline constexpr std::array<std::string_view, 5> kImproverNames = {"blocks", "blocks-dp", "witness",
                                                                   "ilp", "lns"};
// RematParams::method's values: "best" (the preset RematParams::best) or one method by name.
inline constexpr std::array<std::string_view, 9> kMethodNames = {
    "best", "greedy", "checkpoint", "lookahead", "ilp", "blocks", "blocks-dp", "witness", "lns"};
// GreedyParams::score's values.
inline constexpr std::array<std::string_view, 3> kGreedyScores = {"log", "peak", "lifetime"};
// CheckpointParams::cuts's values.
inline constexpr std::array<std::string_view, 3> kCheckpointCuts = {"both", "insensitive", "ops"};
// FitParams::by's values.
inline constexpr std::array<std::string_view, 2> kFitBy = {"arena", "theoretical"};
// RematParams::update_placements' values: the partition's weight-update placements
// (partition/partition.h, UpdatePlacement).
inline constexpr std::array<std::string_view, 4> kUpdatePlacements = {"when-ready", "scheduled",
                                                                      "split", "at-end"};

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

// A portfolio as data: the builders run from the base order (the cheapest schedule within the
// target kept, else the lowest peak), then each improver in turn on that schedule.
struct Preset {
  std::vector<std::string> build;
  std::vector<std::string> improve;
  // The improvers run from this many of the builders' distinct schedules, best first (Better),
  // and the better result is kept: what they make of a schedule is not monotone in its cost.
  int picks = 1;
};

struct GreedyParams {
  // The most recomputations it adds before giving up on a budget.
  int max_steps = 20000;
  // Gives up after this many recomputations in a row that left the lowest peak so far
  // unchanged (a plateau of equal peaks takes one per step).
  int stall_steps = 200;
  // The most ops one eviction may recompute, the evicted storage's producers and, for inputs
  // freed before the peak, their producers in turn (a chain).
  int max_chain = 16;
  // How candidates are ranked, all per unit of recompute cost (MONeT's and Checkmate's
  // currency: cheap memory-bound ops go before matmuls and convolutions). "log": bytes freed
  // at the peak times log(1 + steps they stay freed); "peak": the bytes alone; "lifetime": the
  // bytes times the steps (the first greedy's rule, kept for comparisons).
  std::string score = "log";
  // A candidate also counts the other storages its copies free at the peak (outputs of the
  // recomputed ops made by them alone and unused until the copies run).
  bool count_siblings = true;
  // Copies run right before the next use of what they recompute, or, when a storage they read
  // is overwritten in place before that use (an optimizer step interleaved with the backward
  // updating a weight), right before that write; off: such candidates are dropped.
  bool copy_before_writes = true;
  // Once within the budget, tries dropping this many recomputations, most expensive first,
  // keeping each drop that stays within the budget.
  int prune_attempts = 200;
  // Then, a local search: drop one run of copies (dearest first) and repair the peak with
  // greedy recomputations costing less in all, at most this many drops tried (0: off); each
  // repair takes at most swap_repair_steps recomputations.
  int swap_attempts = 100;
  int swap_repair_steps = 50;
  // Once the descent stops lowering the peak (stall_steps or no candidate left), go on from
  // its lowest peak also offering, for each eviction whose chain recomputes inputs freed
  // before the peak, the eviction that holds those inputs instead (MOCCASIN's retention
  // decision). Budgets the descent reached before are planned as without it.
  bool hold_inputs = true;
  // With hold_inputs, also a second descent offering those evictions from its first step; each
  // budget gets the better of the two (Better: within it at less compute, else the lower peak).
  bool hold_descent = true;
};

struct CheckpointParams {
  // Segment counts tried, from 1 up to this multiple of sqrt(forward ops).
  double max_segments_factor = 2.0;
  // Where segments are cut. "insensitive": at the forward's memory-insensitive ops (the
  // partition's segment boundaries; Chen et al.'s rule), k segments evenly by the forward
  // bytes between them; "ops": k segments of equal op count (the first rule); "both": every
  // segmentation of either, the cheapest within the budget kept.
  std::string cuts = "both";
};

// The block pass (method "blocks", and an improver of `best`).
struct BlocksParams {
  // Sweeps over the groups of consecutive blocks (independent subgraphs of the partition), at
  // most this many (0: off), stopping after a sweep that changed nothing.
  int rounds = 1;
  // Blocks are grouped in forward order until a group holds this many forward ops (ResNet's
  // bottleneck is about 10 blocks of 3-6 ops; a group's recomputations are chosen together,
  // the other groups' held fixed).
  int group_ops = 24;
  // The greedy's evictions inside a group are collected at up to split_steps steps over the
  // budget (evenly spaced), and the best by the greedy's score kept, at most max_candidates;
  // their cheapest cover of the excess is found by branch and bound of at most search_nodes
  // nodes, and up to verifications covers are checked by roam's evaluation (the additive
  // estimate can be short when evictions overlap).
  int split_steps = 8;
  int max_candidates = 20;
  std::int64_t search_nodes = 200000;
  int verifications = 8;
};

// The budget split over the chain of blocks (method "blocks-dp", and an improver of `best`).
struct BlocksDpParams {
  // Groups of consecutive blocks of at least this many forward ops (0: off) get their options
  // measured alone and one option each chosen together by a dynamic programme over the chain.
  int group_ops = 8;
  // A group's options are every subset of its best evictions at the start of its backward,
  // at most this many (2^n subsets; 0: only none and the incumbent's copies).
  int targets = 8;
  // The programme runs at most this often: an assembled schedule over the budget teaches the
  // excess at its groups' steps, and once one fits (or none), the targets are raised (the
  // summary is conservative) by an offset doubling after each cheaper fit.
  int retries = 8;
  // Each run of the programme yields up to this many distinct combinations, cheapest first,
  // verified in turn until one fits. 1: on ResNet-50 at one third, 8 and 32 found nothing
  // cheaper and cost 3x and 20x the time.
  int candidates = 1;
  // It gives up before measuring options when more than this fraction of the groups (after
  // the first) outlive an outer group's span, i.e. the chain does not nest (ResNet-50: none;
  // GPT-2 XL: about half, where it found nothing for 9 s).
  double max_crossing = 0.25;
  // Its work, bounded so that the budget split never dominates a plan (0: no limit): it gives
  // up once the options it measured add up to this many schedule steps (an option is measured
  // on the whole schedule), and its programme stops, keeping what it found, once its runs have
  // weighed this many (state, option) pairs in all. ResNet-50 at one third, its best case,
  // takes 4.4 million and 80 million; llama-7b at half would take 166 million and 1.5 billion
  // (58 s) for nothing cheaper (perf/RESULTS.md, "Weight updates in the start order").
  std::int64_t max_measured_steps = 50'000'000;
  std::int64_t max_transitions = 200'000'000;
  // Its schedule is then polished by the greedy's prune and swap search.
  bool polish = true;
  // The programme's bytes kept off are rounded down to this quantum (0: the budget / 4096),
  // which bounds its states per option to the budget over the quantum; the rounding is
  // conservative (at most one quantum per group).
  std::int64_t quantum = 0;
};

// The compute lower bound (remat/bound.h OverheadLowerBound), reported as lower_bound with
// every plan, and the witness schedule's seed.
struct OverheadBoundParams {
  // The most cuts it reasons at, the ops with most bytes forced live first (0: off). 1: on
  // ResNet-50 at one third and GPT-2 XL at half, the most forced op gave the best bound of the
  // four most forced.
  int cuts = 1;
  // The most cuts on one chain of the DAG (the most forced op, then the next most forced
  // comparable with every one chosen) reasoned at together in one MILP, where recomputation
  // forced at several cuts adds up (remat/chain_bound.cpp); its bound is taken where it beats
  // the single cut's. 0 or 1: off.
  int chain_cuts = 4;
  // The chain's cuts are spread evenly over this many candidates on it, most forced first. 4
  // (no spread, the most forced ops on the chain): on ResNet-50 at 25% and 50% the adjacent
  // ops at the turn gained 0.038 and 0.0003 points, spread over 16 or 256 nothing.
  int chain_pool = 4;
  // Branch-and-bound nodes of the chain's MILP (its LPs have max_lp_iterations each): its
  // columns are the single cut's times the cuts, and on GPT-2 XL 500 nodes took over 30 s.
  std::int64_t chain_max_nodes = 20;
  // The chain is skipped where its MILP has more columns than this (0: no limit): ResNet-50's
  // four cuts make 1,633 columns (0.2-0.4 s), GPT-2 XL's 15,267 (14 s, nothing gained).
  std::int64_t chain_max_columns = 8000;
  // Its work: GLPK's simplex iterations per LP and branch-and-bound nodes of the best cut's
  // MILP (0: no limit). Bounded by work, not seconds, the bound is the same on any machine;
  // out of work, GLPK's proven bound stands (the LP relaxation's once that is solved, 0
  // before). ResNet-50's bound at one third is 14.79% from the LP and 15.03% after branching.
  std::int64_t max_lp_iterations = 200000;
  std::int64_t max_nodes = 500;
  // Seconds it may take in all, an outer cap only (also capped by the plan's time limit).
  double time_limit_s = 30.0;
  // Where the plan has a time limit, the most of the time left it may take (in (0, 1]), so
  // that the methods and the layout, which make the plan, keep the rest: with the whole time
  // left, GPT-2 XL's bound (1.9 s of branching) took all of a 2 s limit and the plan, which
  // fits in 1.5 s without it, was reported out of reach.
  double time_share = 0.25;
  // Whether a sweep computes it at every point (and so runs the sweep preset's witness; off,
  // GPT-2 XL's curve stays under a minute).
  bool in_sweep = false;
};

// The witness schedule (remat/witness.cpp), seeded by the compute bound's best solution.
struct WitnessParams {
  // Whether a preset's witness also runs at a fit retry's target, below the budget its bound
  // was computed at, with a bound of its own computed at that target. Off: at such a target it
  // keeps the incumbent. On llama-tiny at 30% those bounds were 40 of 44 witness calls and 19 s
  // of a 44 s plan, and on 52 measured cells (12 of presets, Checkmate's 40) no plan changed
  // without them (perf/RESULTS.md, "The witness at a retry's target"). Named alone (--method
  // witness), it always computes a bound at its target.
  bool at_retries = false;
};

// The in-order lower bound (remat/bound.h InOrderLowerBound), reported as order_lower_bound
// with every plan whose original computations keep its start order.
struct OrderBoundParams {
  bool enabled = true;
  // Its work, so that the bound is the same on any machine: nodes of its branch and bound (1:
  // the LP relaxation alone) and GLPK's simplex iterations over all of them (0: no limit); out
  // of work, what the nodes solved prove stands (nothing before the root LP is solved).
  // time_limit_s is an outer cap (also capped by the plan's time limit).
  std::int64_t max_nodes = 200;
  std::int64_t max_lp_iterations = 100000;
  // Above this many nonzeros only the LP relaxation is solved (one node): on GPT-2 XL at 90%
  // (633,489) 200 nodes took 8 s more and proved nothing more; on random layered graphs (at most
  // a few thousand) branching raised every bound (perf/RESULTS.md, "The in-order lower bound").
  std::int64_t branch_max_nonzeros = 100'000;
  // It is skipped where its LP has more nonzeros than this (0: no limit): steps above the
  // budget times the storages evictable there, and the copies' inputs; counted as the model is
  // built, which stops once past it. ResNet-50 at batch 32 at one third: 197,795 (0.4 s); GPT-2
  // XL at 90%: 758,905 (1.7 s); at 80%: 1,676,160, its LP alone 3.8 s for 1.6796% (the compute
  // bound is as high there); at half: 3,180,189 and more, whose LP did not finish in 10 s.
  std::int64_t max_nonzeros = 1'000'000;
  double time_limit_s = 10.0;
  // Levels of a copy's inputs (0: none) that the order has freed by then: each held (bytes at
  // the step) or made again by a copy of its producer, whose inputs are the next level. The
  // model grows as inputs^levels (random-layered-250 at 80%: 40 MB at 8 levels, 318 MB at 12),
  // so configs take at most 4; a third level proved nothing more on the cells measured.
  int input_levels = 2;
};

// The exact method ("ilp").
struct ExactParams {
  // Graphs with more ops than this keep the warm start (the greedy's answer). 60: on
  // random-layered-100 the MILP's root LPs alone take 10-25 s and it found nothing in 60 s.
  int max_ops = 60;
  // At most this many computations of one op (MOCCASIN's C).
  int max_computations = 2;
  // Stages per window of its neighbourhood search from the incumbent, the branch-and-bound
  // nodes one window may take, and the sweeps over the base order at most (it stops earlier
  // after a sweep that gained nothing); window_time_limit_s caps a window's seconds.
  int window_stages = 24;
  std::int64_t window_max_nodes = 200;
  int window_sweeps = 2;
  double window_time_limit_s = 5.0;
  // The simplex iterations of each root LP (the relaxation its warm start is rounded from, each
  // window's, the whole MILP's), and the nodes of the whole MILP after the window search (0: no
  // limit). With these, its answer does not depend on the machine; the plan's time limit stays
  // an outer cap.
  std::int64_t max_lp_iterations = 20000;
  std::int64_t max_nodes = 500;
};

// Ruin and recreate (method "lns", remat/lns.cpp): rounds that drop a few runs of copies at
// random and repair the peak with the greedy's evictions, drawn among the few best.
struct LnsParams {
  // Graphs with more ops keep the incumbent. 200: on random-layered-100 at 90% it takes the
  // lookahead's 3.33% to 1.67% in 0.1 s; on 250-1000 nodes it found nothing cheaper, and its
  // layouts of the rewritten graph took up to the whole time limit (perf/RESULTS.md).
  int max_ops = 200;
  // Rounds (each one repair and one prune).
  int rounds = 500;
  // A round drops between 1 and this many runs of copies.
  int ruin_runs = 3;
  // Each repair step draws among this many best evictions at the peak; repair_steps at most.
  int choice_width = 3;
  int repair_steps = 50;
  // A round's schedule becomes the current one where it costs at most this fraction more,
  // the slack shrinking linearly to nothing over the rounds (threshold accepting).
  double accept_slack = 0.02;
  // Where the plan fits by the arena, a cheaper schedule is kept only where it lays out within
  // the budget (the user's, also at a fit retry's lower target): by best-fit, by llfb, or by a
  // layout search of at most this many nodes.
  std::int64_t layout_max_nodes = 1000;
  // The random sequence's seed: the same seed, the same plan on any machine.
  std::int64_t seed = 1;
};

struct LookaheadParams {
  // The span exponents of its drop score (estimated recompute cost per byte per
  // step^exponent until the next use) and the targets above the budget (fractions) it
  // simulates, every pair once; the cheapest schedule within budget is refined.
  std::vector<double> exponents = {0.0, 0.5, 1.0, 2.0};
  std::vector<double> target_slacks = {0.0, 0.01, 0.03};
  // A simulation whose schedule roam's memory model finds over budget is rerun with its target
  // lowered by the excess, at most this often.
  int target_retries = 3;
  // Where a simulation finds nothing left to drop, it is rerun holding the dropped inputs of
  // the value that would then free most, at most this often per simulation.
  int hints = 200;
  // Protections tried in its refinement (one simulation each).
  int refine_attempts = 200;
  // A simulation gives up after this many computations per op of the graph.
  int max_computations_factor = 20;
  // The simulation also drops values that views alias (a reader through a view recomputes the
  // value, then the view), values whose inputs a later in-place write changes (before it),
  // and values computed from a graph output (the backward, from the loss): on training graphs
  // it then plans where it otherwise drops next to nothing (llama-7b at 30%: 8.11%, else out of
  // reach). Off: in `best` it found no cheaper plan on any preset measured and took GPT-2 XL at
  // half from 19 to 46 s (perf/RESULTS.md, "The lookahead on training graphs").
  bool whole_graph = false;
};

// Fitting the arena (docs/remat.md, "Fitting by the arena"): the layout of a schedule, the
// retries at lower targets, and best's fallback.

// The layout search of the prune's windows: the first preorder and the candidate branching
// alone (no other preorders, no restarts). A window that fits nowhere spends its whole node
// limit, and over the nine entries of the layout search's round-robin most of it went to entries
// that seldom fit one; with these two, random-layered-500 at 80% plans the same in half the time
// (perf/RESULTS.md, "Windows searched with one preorder").
inline layout::SearchParams PruneWindowSearch() {
  layout::SearchParams search;
  search.multiple_preorders = false;
  search.random_preorders = 0;
  return search;
}

// remat.fit.prune (FitParams::prune).
struct ArenaPruneParams {
  int max_trials = 200;  // repeats tried in all (0: off)
  // Where a buffer that lives longer finds no free place within the budget, the buffers alive
  // around it (this many steps each side of its lifetime, one window per margin in turn) are
  // searched again at the budget with the rest fixed (fit.repack's subproblem limits; []: not)...
  std::vector<int> repair_margins = {0, 10, 20, 40, 80};
  // ... and where no such window fits, the whole layout is repacked towards the budget one
  // alignment at a time (fit.repack's windows), at most this many windows a trial (0: not)...
  int repack_windows = 100;
  // ... and this many in all for one prune (one per fit loop: best's, each fit.alone
  // builder's, each start order's).
  int max_windows = 1000;
  // Both kinds of window are searched with this (in place of fit.repack.search).
  layout::SearchParams search = PruneWindowSearch();
};

struct FitParams {
  // Best-fit is tried on the rewritten graph, then llfb; if the arena still exceeds the
  // budget, the methods are rerun with the target lowered by the excess, at most this often
  // (in each descent of retry_steps).
  int retries = 4;
  // Each retry lowers the target by a fraction of the arena's excess (at least one byte): 1
  // buys the whole excess with recomputation at once; less steps down towards it, since a
  // schedule at a lower target lays out with another excess. One descent of retries per
  // fraction listed: the first as the loop always ran, each other one, only where the first
  // attempt missed, from that miss again at its own step; the cheapest fit of all is the plan
  // (Better), and a descent stops at a schedule that costs as much as the plan so far. Which step
  // fits cheapest is not monotone: on random-layered-500 at 80% a quarter gives 2.07%, a half
  // 2.47%; with MOCCASIN's protocol and its input order kept a half fits three cells a quarter
  // misses, and a quarter five cells cheaper (perf/RESULTS.md).
  std::vector<double> retry_steps = {0.5, 0.25};
  // Where a retry's lower target fits after a higher one missed, the targets between are
  // bisected this many more times (each one more run of the methods, from the greedy's schedule
  // at the miss) and the cheapest fit is the plan: a schedule's arena is not monotone in its
  // target. With MOCCASIN's protocol and its input order kept, 4 makes 9 of 24 cells cheaper
  // (random-layered-100, seed 3, at 80%: 20.72% -> 15.98%) for up to twice the time; where the
  // first attempt fits, as on ResNet-50 and GPT-2, it never runs (perf/RESULTS.md).
  int refine_retries = 4;
  // The prune in the arena, on the plan that fits: a repeat is dropped where the schedule stays
  // within the budget by its theoretical peak and the plan's layout, with only the buffers that
  // now live longer placed again, still fits it. The retries buy the layout slack across the
  // whole schedule; this gives back the repeats it did not need.
  ArenaPruneParams prune;
  // What the budget bounds: "arena" (the laid-out arena, offsets included: what a runtime
  // allocates) or "theoretical" (the sum of live bytes at each step, MOCCASIN's and
  // Checkmate's accounting; for comparisons with them; the plan's arena may then exceed the
  // budget by its fragmentation, and the report says so).
  std::string by = "arena";
  // Layout search (layout/layout.h) per attempt when best-fit and llfb both miss the
  // schedule's theoretical peak: at most this many search nodes (0: none), so that the plan
  // does not depend on the machine's speed or load; search_time_limit_s is an outer cap.
  std::int64_t search_max_nodes = 100000;
  // ... and at most this much work (layout/layout.h's max_work: what the search's loops visit;
  // 0: no limit). A node's cost grows with its group: on random-layered-1000's layouts 100,000
  // nodes are at most 177 million units, on GPT-2 XL's 4,572 buffers 865 million (4 s), so the
  // node limit alone let a search there near the time cap under load (perf/RESULTS.md).
  std::int64_t search_max_work = 250'000'000;
  double search_time_limit_s = 10.0;
  // Where the plan has a time limit, each attempt's methods stop this share of the time left
  // (at most search_time_limit_s) before it, so that the schedule they return is laid out with
  // the search above before the plan's deadline (in [0, 1); 0: the methods may run to the
  // deadline itself, and a schedule they return there gets best-fit and llfb alone). Runs the
  // time limit does not cut short are unchanged. GPT-2 XL at half its arena (RNG state kept)
  // with --time-limit 5: 0.5 fits at 4.90%, 0.3 and 0 miss; at 10 s 0.3 fits, 0.1 misses.
  double layout_reserve = 0.5;
  // Where that search leaves the arena over the budget: a second search (same limits) with its
  // bottom-left branching and unallocated floor in groups of any size, before the methods are
  // rerun at a lower target. On random-layered-1000 at 80% the default search stops at 921
  // bytes for a schedule whose theoretical peak is 909 (budget 918); this one packs it at 909.
  bool search_wide = true;
  // The wide search runs on layouts of at most this many buffers. Its techniques cost more
  // per node as a group grows: on GPT-2 XL's thousands of buffers its 100,000 nodes took
  // over 10 s, so search_time_limit_s, not the node limit, ended it (search_max_work now
  // ends it first, at about 2,500 nodes); above 2,000 buffers it packed no measured plan
  // tighter, so it is not run there (perf/RESULTS.md).
  int search_wide_max_buffers = 2000;
  // Where the arena is still over the budget after those, one more search (same limits) in
  // capacity mode: it asks for a layout within the budget only, and stops at the first. The
  // minimising searches above leave random-layered-250's theoretical-only schedule at 80%
  // (theoretical 834, budget 844) at 845; this one packs it within 844, so the plan costs
  // 0.30% instead of a retry's 0.51% (perf/RESULTS.md).
  bool search_at_budget = true;
  // Where the arena is still over the budget after those, the layout is repacked window by
  // window towards the budget (layout/repack.h; max_subproblems 0: off).
  layout::RepackParams repack;
  // Windows repacking may solve in all for one budget's plan, over every layout it repacks
  // (best's misses, each fit.alone builder's, each start order's): a layout gets at most what
  // is left. repack.max_subproblems bounds one layout only, and a plan may repack many, so
  // without this a plan's work had no bound and under load the time limit struck first.
  int repack_plan_subproblems = 600;
  // Where the arena of best's first schedule misses the budget, after the retries, the greedy
  // is run from base_order and from each of these base orders (baseline/orders.h names), with
  // chains of greedy.max_chain and long_chain ops (0 or at most greedy.max_chain: not); their
  // schedules within the budget by the theoretical peak are laid out, cheapest first, and the
  // first whose arena fits is kept where cheaper than the retries' plan. Empty: off.
  // random-layered-100 at 80% fits from xla-list (arena 670 of 672) and from no other; chains of 16
  // stall at a peak of 689 there, of 24 or more reach 670, and 656 from xla-list.
  std::vector<std::string> fallback_base_orders = {"xla-list", "program"};
  // Before best's methods, each of these baseline orders is laid out as it is: the first whose
  // plain plan fits the budget is the plan, with no recomputation (the cheapest there is,
  // status optimal). A budget is a fraction of one order's peak, and another order may be
  // lower: random-layered-250 at 90% fits in the program order (893 of 950 bytes), where
  // recomputing from the heuristic order cost 0.17%. Empty: off.
  std::vector<std::string> reorder_orders = {"program", "lescea", "xla-list", "xla-dfs",
                                             "heuristic"};
  int long_chain = 64;
  // Where best's plan misses the budget or kept one of these builders' schedules, the builder
  // is also planned alone (its own retries reach other targets) and kept where it does better.
  std::vector<std::string> alone = {"lookahead"};
};

struct RematParams {
  std::string method = "best";
  Bytes alignment = kDefaultAlignment;
  // Wall-clock seconds of the whole plan (a sweep: of the whole sweep), an outer cap: every
  // search is bounded by work first (nodes, iterations, attempts), so that the same input gives
  // the same plan on any machine; where the cap strikes, the best plan so far is returned.
  double time_limit_s = 60.0;
  RecomputeRule rule;
  // Base order the no-remat peak and every method start from (baseline/orders.h names).
  std::string base_order = "heuristic";
  // `best` also runs from each of these orders whose no-remat peak is below base_order's, and
  // keeps the best plan; budgets stay fractions of base_order's peak. Recomputing from a lower
  // order has less to remove: random-layered-250 at 80% costs 0.51% from the program order
  // (84.6% of the heuristic order's peak) against 2.13% from the heuristic order. On the
  // training presets no order is below the heuristic, so nothing more runs. Empty: off.
  std::vector<std::string> start_orders = {"program", "lescea", "xla-list", "xla-dfs", "heuristic"};
  // `best` also runs from each order of start_orders whose no-remat peak ties base_order's (a
  // different order at the same peak), after the lower ones, and keeps the better plan: the
  // peak does not see where recomputation is cheap. At 30% llama-7b costs 6.01% from the
  // heuristic order and 5.66% from the program order; BERT-large at half is proven optimal
  // from it, MobileNet at half gains 0.35 points from xla-dfs. It costs a further plan where
  // the first does not meet the compute bound (GPT-2 XL at half 29 -> 117 s, ResNet-50 at one
  // third 4.8 -> 11.8 s, the same plans; perf/RESULTS.md), so it is off by default and the
  // presets where it gains (LLaMA, BERT-large, MobileNet) set it.
  bool start_ties = false;
  // Where listed, every order remat starts from (base_order, start_orders, the fit's orders)
  // first has its weight-update branches placed by the partition (docs/remat.md, "Weight
  // updates in the start order") by the first of these placements that does not raise its
  // no-remat peak, where the graph has such branches. The peak alone does not see where a
  // gradient waits for its update: the heuristic order runs llama's weight-gradient products
  // at the end of the backward, so each layer's gradients stay live through it. At 30% of the
  // peak llama-7b costs 11.98% from it and 6.01% from [when-ready, scheduled]; llama-13b 9.48%
  // and 4.05%. Elsewhere it measured no such gain (U-Net at 30%: 28.39% -> 30.47%, 1.6 -> 25 s;
  // perf/RESULTS.md), so it is off by default and the LLaMA presets set it. Empty: every order
  // as the baseline makes it.
  std::vector<std::string> update_placements;
  // `best` also runs from the base order as the baseline makes it, where its weight updates
  // were placed, last, and keeps the better plan: what the methods make of an order is not
  // monotone in where its gradients wait. It costs a second plan (llama-7b at half 6.3 -> 8.8 s,
  // GPT-2 XL at half 11.7 -> 20.2 s with placements).
  bool start_as_given = false;

  // `best`: the builders and improvers it runs. The checkpoint is left out, as measured
  // without gain (perf/RESULTS.md: dominated by the greedy and lookahead on every graph
  // measured) and stays callable by name. The block pass stays although issue 28 proposed
  // dropping it (0.005 points on GPT-2 XL at half, none on ResNet-50, +1.7 s): on
  // random-layered-500 at 90% it takes lookahead's 0.75% to 0.48%. The budget split gains 0.12
  // points on ResNet-50 at one third for about 3 s; the witness 0.19 points there; the ilp runs
  // only on graphs of at most ilp.max_ops ops, ruin and recreate on graphs of at most
  // lns.max_ops.
  // Improving both builders' schedules (picks 2): on the 48 cells of MOCCASIN's protocol, 2
  // cheaper (random-layered-250 at 80%: 1.87% -> 1.69%), none dearer, 1% more time.
  Preset best = {{"greedy", "lookahead"}, {"blocks", "blocks-dp", "witness", "ilp", "lns"}, 2};
  // `--sweep --method best`: per budget, the same without the budget split (on GPT-2 XL it
  // would nearly double the sweep's time for at most 0.07 points per point); the witness runs
  // only with overhead_bound.in_sweep. The greedy descends once for all budgets.
  Preset sweep = {{"greedy", "lookahead"}, {"witness", "ilp"}};
  GreedyParams greedy;
  CheckpointParams checkpoint;
  LookaheadParams lookahead;
  BlocksParams blocks;
  BlocksDpParams blocks_dp;
  OverheadBoundParams overhead_bound;
  WitnessParams witness;
  OrderBoundParams order_bound;
  ExactParams ilp;
  LnsParams lns;
  FitParams fit;
};

// Whether plans are fitted by the theoretical peak (the sum of live bytes) rather than the arena.
inline bool FitByTheoretical(const RematParams& params) { return params.fit.by == "theoretical"; }

}  // namespace roam::remat
