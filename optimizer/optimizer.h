// The optimizer: ROAM end to end (docs/optimizer.md). Load → baselines and the certified bound →
// partition the best baseline order → solve the leaves concurrently (order ILP, then each
// leaf's layout with activations pinned at the bottom) → merge → never worse than the best
// baseline → a plan that passes the validator.
//
// In: a finalized graph and OptimizerParams (optimizer/params.h), plus optional run control
// (an interrupt flag, a progress callback). Out: a valid plan, the baselines' figures on the
// same graph, the certified lower bound and the gap to it, leaf counts and truthful labels.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/graph.h"
#include "core/outcome.h"
#include "core/plan.h"
#include "ilp/order_ilp.h"
#include "optimizer/params.h"
#include "optimizer/whole_graph.h"

namespace roam {

struct PlanFigures {
  std::string name;           // "pytorch", "heuristic", "roam", "model"
  std::string order, layout;  // how it was made, e.g. "program" + "pytorch"
  PlanSummary summary;
};

struct LeafCounts {
  int total = 0;
  int sent_to_solver = 0;    // order ILP ran
  int proved_optimal = 0;    // the solver proved the leaf's order optimal
  int time_limited = 0;      // the solver ran out of time (the clock: depends on the machine)
  int work_limited = 0;      // the solver spent its work limit (the same on any machine)
  int skipped_by_bound = 0;  // could not lower the whole graph's peak (bound shortcut)
  int single_op = 0;         // one op: nothing to order
  int not_started = 0;       // the run's time limit or an interrupt came first
  int solver_errors = 0;     // the solver failed (a GLPK error); the leaf keeps its warm start
  // Leaf layouts handed to the layout engine (planner.leaf_layout.engine), and what became of
  // them, in the words used for the orders above.
  int layouts_solved = 0;
  int layouts_proved_optimal = 0;
  int layouts_time_limited = 0;
  int layouts_work_limited = 0;
};

struct OptimizeResult {
  Plan plan;  // passed ValidatePlan
  OptimizeMode mode = OptimizeMode::kRoam;
  Streams streams = Streams::kSingle;  // multi: plan and baselines carry steps
  // The certified bound (core/lower_bound.h); valid for multi-stream plans too, since
  // serializing steps never raises the peak.
  Bytes lower_bound = 0;
  double gap = 0.0;  // (plan theoretical peak - lower_bound) / theoretical peak
  Outcome order_outcome = Outcome::kHeuristic;
  Outcome layout_outcome = Outcome::kHeuristic;
  // The pipeline's own plan before the never-worse comparison, and whether the best baseline
  // plan replaced it because it was better.
  PlanFigures pipeline;
  bool baseline_won = false;
  std::vector<PlanFigures> baselines;  // pytorch (program + caching allocator), heuristic
  Plan best_baseline;  // the "heuristic" baseline's plan (baseline/best.h), as batch reports it
  LeafCounts leaves;
  bool peak_leaves_optimal = false;  // every leaf at the pipeline's peak proved optimal
  bool interrupted = false;
  // The clock (or an interrupt) stopped a part of the plan: a leaf's order or layout, a
  // whole-graph ILP, the final layout pass, or the run before its pipeline. Another run can then
  // return another plan; parts stopped by their work limits leave it false.
  bool time_limit_hit = false;
  std::vector<std::string> notes;  // plain sentences for the summary
  double seconds = 0.0;
};

// Stages, in the order a run reports them: "baselines", "lower bound", "partition",
// "leaf orders", "leaf layouts", "merge", "whole-graph ILP" (model mode), "whole-graph layout",
// "pack steps" (multi-stream roam mode), "validate".
struct Progress {
  int leaves_done = 0, leaves_total = 0;
  double elapsed = 0.0;
  const char* stage = "";
};

struct RunControl {
  // Set by another thread (a signal handler's flag): stop the solvers, return the best valid
  // plan found so far with `interrupted` set.
  const std::atomic<bool>* stop = nullptr;
  // When the run's time budget (OptimizerParams::time_limit) started: the command line starts
  // it before the input is loaded or generated, so that generation counts. Default: now.
  std::optional<Deadline::Clock::time_point> started;
  // The clock every stage reads (tests inject one to make the deadline pass at a chosen
  // stage). Empty: the steady clock.
  Deadline::Now now;
  std::function<void(const Progress&)> progress;  // never called by two threads at once
  // Solves one leaf's order in place of ilp::SolveOrderIlp (same arguments; called from
  // several threads at once). Empty: the real solver. Tests inject solver failures here.
  std::function<ilp::OrderIlpResult(const Graph&, const MemoryModel&, const Dependencies&,
                                    const Subgraph&, std::span<const OpId>,
                                    const ilp::OrderIlpParams&)>
      leaf_order_solver;
};

// Throws InputError for bad parameters; std::logic_error if a plan fails validation (a bug).
OptimizeResult Optimize(const Graph& graph, const OptimizerParams& params,
                        const RunControl& control = {});

}  // namespace roam
