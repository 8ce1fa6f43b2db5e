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
#include "remat/params.h"

namespace roam::remat {

// ---- The model -------------------------------------------------------------------------

// Whether op may be computed again: it is not an optimizer op, not an in-place write (an
// aten name ending in '_', which PyTorch reserves for them) into the storage of a graph input,
// has outputs, and either draws no random numbers or rule.rng_state_kept. An in-place write
// to an activation is recomputable, but CheckSchedule only accepts its copy where the storage
// it writes was recomputed first (so the copy writes the fresh copy, never the original).
bool IsRecomputable(const Graph& graph, OpId op, const RecomputeRule& rule = {});
// Output t of op is a state update that a copy of op leaves out: op is a batch norm whose
// update rule.state_update_skipped allows skipping, and t lies on a graph input's storage.
bool IsSkippedStateUpdate(const Graph& graph, OpId op, TensorId t, const RecomputeRule& rule = {});
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
// solved by GLPK, warm-started from the greedy), "blocks" (the greedy's schedule improved by
// the block pass over the partition's subgraph tree), "best" (the cheapest of them, improved
// by the block pass; the ilp only on graphs of at most ilp_max_ops ops).
std::span<const std::string_view> MethodNames();

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
  // "infeasible-proven" (the budget is below peak_lower_bound, or the ilp proved no schedule
  // of its model fits), "infeasible", "error"
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
  // PeakLowerBound: no schedule's peak is below it.
  Bytes peak_lower_bound = 0;
};

// Plans under budget (bytes of the arena). An infeasible budget returns feasible = false with
// the plan of the smallest peak found.
RematResult PlanRemat(const Graph& graph, Bytes budget, const RematParams& params = {});

// Theoretical peak of graph's base order without recomputation (the reference of ratios).
Bytes NoRematPeak(const Graph& graph, const RematParams& params = {});

// A peak no remat schedule of graph reaches below, whatever it recomputes and in whatever
// order: every op is computed at least once, and at that step the planned storages it touches
// are live, and so is every graph output one of its ancestors made (held to the end, never
// recomputed). PeakLowerBounds gives it per op (the op's first step); PeakLowerBound is their
// maximum. A budget below it is out of reach (status "infeasible-proven").
std::vector<Bytes> PeakLowerBounds(const Graph& graph, Bytes alignment);
Bytes PeakLowerBound(const Graph& graph, const RematParams& params = {});

// A lower bound on the compute overhead of every schedule of graph whose theoretical peak
// fits budget, whatever it recomputes and in whatever order (docs/remat.md, "Compute lower
// bound"): at the step of a cut op, each storage made before the cut and read after it is
// either live or made again after the cut by copies of its writers, and each such copy reads
// its inputs the same way; the cheapest such choice with the live bytes within the budget is
// a MILP (GLPK), whose proven bound is taken (the cuts: the params.overhead_bound_cuts ops
// with the most bytes forced live, core/lower_bound.h, beyond the budget).
struct OverheadBound {
  double overhead = 0;      // fraction of the original total cost; 0 when nothing is proven
  bool infeasible = false;  // proven: no schedule fits the budget at cut
  OpId cut = kNoOp;         // the cut the bound (or the proof) comes from
  // The best solution the MILP found at cut (a witness, not a schedule): the ops it computes
  // again after the cut, ascending. Empty when none was found or none is needed.
  std::vector<OpId> redone;
};
OverheadBound OverheadLowerBound(const Graph& graph, Bytes budget, const RematParams& params = {});

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
  // The compute lower bound at this budget (params.overhead_bound_in_sweep; else 0).
  double lower_bound = 0;
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
