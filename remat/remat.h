// Rematerialization under a memory budget (docs/remat.md): drop some forward outputs and
// recompute them later, so that the peak of the planned arena fits a budget at the least
// added compute.
//
// In: a finalized graph (op costs optional), a budget in bytes, RematParams. Out: a
// RematResult holding a remat schedule, the rewritten graph it induces (an ordinary
// roam-graph-v1 whose copies say which op they recompute) and a validated plan of it whose
// order is the schedule, so the budget is checked against the plan's own order.
//
// A remat schedule lists ops of the original graph in execution order, an op once per
// computation: its first appearance is the original, each later one a copy. Every op reads
// the latest computation of each of its inputs scheduled before it. Rewrite() turns it into
// the rewritten graph; CheckFaithful() (used by `roam validate`) checks any graph that holds
// copies.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/plan.h"
#include "core/types.h"

namespace roam::remat {

// ---- The model -------------------------------------------------------------------------

struct RecomputeRule {
  // Ops drawing random numbers (dropout, bernoulli, rand*, normal, ...) are recomputed only
  // when the runtime keeps their RNG state and restores it for the copy, as
  // torch.utils.checkpoint's preserve_rng_state does. Off: roam does not assume it.
  bool rng_state_kept = false;
};

// Whether op may be computed again: it is not an optimizer op, not an in-place write (an
// aten name ending in '_', which PyTorch reserves for them) into the storage of a graph input,
// has outputs, and either draws no random numbers or rule.rng_state_kept. An in-place write
// to an activation is recomputable, but CheckSchedule only accepts its copy where the storage
// it writes was recomputed first (so the copy writes the fresh copy, never the original).
bool IsRecomputable(const Graph& graph, OpId op, const RecomputeRule& rule = {});
// The op draws random numbers (by its aten name).
bool IsRandom(std::string_view name);

// The cost remat charges for op: Op::cost, or when the file gave none, the memory-bound
// estimate kCostPerByte * (bytes of its input and output tensors), views (outputs that alias
// an input, inputs read nothing) counting 0 bytes.
double OpCost(const Graph& graph, OpId op);
double TotalCost(const Graph& graph);

using Schedule = std::vector<OpId>;  // ops of the original graph, see above

// Empty when the schedule is valid for graph: every op appears at least once, repeats are
// recomputable (rule), every input of every computation is produced earlier (or is a graph
// input), no computation reads a value whose storage an in-place op has since overwritten,
// and a repeated in-place write writes a recomputed storage. Otherwise names the first
// problem.
std::string CheckSchedule(const Graph& graph, std::span<const OpId> schedule,
                          const RecomputeRule& rule = {});

struct Rewritten {
  Graph graph;               // originals keep their dense ids; copies follow, in schedule order
  std::vector<OpId> order;   // the schedule as ops of graph
  std::vector<OpId> origin;  // per op of graph: the original op it computes
  std::vector<int> recompute_count;  // per original op: copies made of it
};

// The rewritten graph of a valid schedule (std::invalid_argument otherwise). Copies get fresh
// external ids above the largest one, names and phases of their originals, Op::recomputes set,
// and one fresh tensor per output of the original (same size and kind, aliasing the latest
// computation of what the original's output aliases, never a graph output). Consumers are
// rewired to the latest computation before them. program_order is the schedule.
Rewritten Rewrite(const Graph& graph, std::span<const OpId> schedule,
                  const RecomputeRule& rule = {});

// Checks the copies of a graph: each copy recomputes an op that is not itself a copy, has its
// name, and produces outputs of the same sizes, kinds and aliasing, output by output; its
// inputs carry the same values as the original's (a tensor carries the value of the original
// tensor it recomputes); no copy is a graph output. With original given, also checks that the
// graph minus its copies is original: the same ops and tensors under the same ids, each op
// reading the same values. Empty when faithful, else the first problem.
std::string CheckFaithful(const Graph& graph, const Graph* original = nullptr);

// ---- Methods ---------------------------------------------------------------------------

// "greedy", "checkpoint" (Chen et al.'s sqrt(n) segments), "lookahead" (the base order
// simulated under the budget, dropping the value cheapest to bring back per byte and step,
// with recursive recomputation), "ilp" (MOCCASIN's retention intervals on the base order,
// solved by GLPK, warm-started from the greedy), "best" (the cheapest of them; the ilp only on
// graphs of at most ilp_max_ops ops).
std::span<const std::string_view> MethodNames();

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
  // Greedy: how candidates are ranked, all per unit of recompute cost (MONeT's and
  // Checkmate's currency: cheap memory-bound ops go before matmuls and convolutions).
  // "log": bytes freed at the peak times log(1 + steps they stay freed); "peak": the bytes
  // alone; "lifetime": the bytes times the steps (the first greedy's rule).
  std::string greedy_score = "log";
  // Greedy: a candidate also counts the other storages its copies free at the peak (outputs
  // of the recomputed ops made by them alone and unused until the copies run).
  bool greedy_count_siblings = true;
  // Greedy: once within the budget, tries dropping this many recomputations, most expensive
  // first, keeping each drop that stays within the budget.
  int greedy_prune_attempts = 200;
  // Checkpoint: segment counts tried, from 1 up to this multiple of sqrt(forward ops).
  double checkpoint_max_segments_factor = 2.0;
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
};

// One point of the memory/compute trade-off.
struct TradeOff {
  Bytes peak = 0;               // theoretical peak of the schedule's rewritten graph
  double compute_overhead = 0;  // recomputed cost / original total cost
  Schedule schedule;
};

struct RematResult {
  Bytes budget = 0;
  Bytes no_remat_peak = 0;  // theoretical peak of the base order without recomputation
  bool feasible = false;    // plan.summary.actual_peak <= budget
  std::string method;       // the method whose schedule was kept
  // "optimal" (the ilp proved it, within its model), "feasible" (a heuristic's), "time-limit"
  // (the ilp's best when time ran out; not feasible: nothing found in time),
  // "infeasible-proven" (the ilp proved no schedule of its model fits), "infeasible", "error"
  // (the ilp's solver failed; the heuristic's answer stands).
  std::string status;
  std::string solver;      // the ilp's solver call, "ok" or "error: ..." (empty: not run)
  double lower_bound = 0;  // on the compute overhead, when the method proves one (else 0)
  double compute_overhead = 0;
  double original_cost = 0;
  double recompute_cost = 0;
  Schedule schedule;
  Rewritten rewritten;
  Plan plan;  // of rewritten.graph, validated, order == rewritten.order
  double seconds = 0;
};

// Plans under budget (bytes of the arena). An infeasible budget returns feasible = false with
// the plan of the smallest peak found.
RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params = {});

// Theoretical peak of graph's base order without recomputation (the reference of ratios).
Bytes NoRematPeak(const Graph& graph, const RematParams& params = {});

// The trade-off curve: for each budget ratio (of the no-remat peak), the least compute
// found; points with feasible = false were out of reach.
struct SweepPoint {
  double ratio = 0;
  Bytes budget = 0;
  Bytes peak = 0;  // actual peak of the plan
  double compute_overhead = 0;
  bool feasible = false;
  std::string method;
  double seconds = 0;  // the first point's include the work the points share
};
// The greedy descends once for all budgets (each point gets what a run for its budget alone
// would) and the checkpoint's segmentations are evaluated once.
std::vector<SweepPoint> Sweep(const Graph& graph, std::span<const double> ratios,
                              const RematParams& params = {});

// ---- Interop ---------------------------------------------------------------------------

// Reads networkx node-link JSON as Checkmate and MOCCASIN publish their graphs: one op per
// node with one output tensor (cost_ram / out_cost bytes, consumed by the node's successors),
// cost from cost_cpu / duration, param_cost as a persistent input of the node; links as
// source/target or "0"/"1"; graph.order, when present, as program_order. Throws InputError
// naming source, the element and the field.
Graph ParseNodeLink(std::string_view text, std::string_view source);

}  // namespace roam::remat
