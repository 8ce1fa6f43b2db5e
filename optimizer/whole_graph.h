// Whole-graph MODeL mode (docs/ilp.md): the order ILP on the whole graph, then the layout ILP
// on the lifetimes that order gives, within one time budget.
//
// In: a finalized graph, its memory model, a warm-start order. Out: an order and one offset
// per planned storage (model.planned order) that always form a valid plan, and for each part
// whether it is optimal, time-limited or the heuristic fallback.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/graph.h"
#include "core/memory_model.h"
#include "core/outcome.h"
#include "ilp/layout_ilp.h"
#include "ilp/order_ilp.h"

namespace roam::opt {

struct WholeGraphParams {
  double time_limit_s = 60.0;
  // Share of the budget the order ILP may use; the layout ILP gets whatever is left then.
  double order_share = 0.5;
  ilp::OrderIlpParams order;    // its time limit is set from the budget
  ilp::LayoutIlpParams layout;  // likewise
  // A proven lower bound on the peak (the certified bound): the order ILP stops at the first
  // incumbent that meets it, and is not run when the warm start already does.
  Bytes order_lower_bound = 0;
};

struct PartReport {
  Outcome outcome = Outcome::kHeuristic;
  ilp::ModelStatus status = ilp::ModelStatus::kError;
  Bytes value = 0;  // peak (order) or height (layout)
  Bytes lower_bound = 0;
  Bytes warm_start = 0;  // the heuristic's value
  double gap = 0.0;
  double seconds = 0.0;
  // GLPK's simplex iterations and the model's nonzeros; work_limited: the ILP's work limit
  // (max_lp_work), not the clock, stopped it, so the part is the same on any machine.
  std::int64_t lp_iterations = 0, nonzeros = 0;
  bool work_limited = false;
  std::string note;
};

struct WholeGraphResult {
  std::vector<OpId> order;
  // Multi-stream (params.order.multi_stream, MODeL-MS): the step of each entry of `order`,
  // dense from 0 (core/steps.h); the layout is on the step lifetimes. Empty otherwise.
  std::vector<Step> steps;
  std::vector<Bytes> offsets;  // model.planned order
  PartReport order_part, layout_part;
};

// warm_order: a topological order of all ops (the best heuristic available).
WholeGraphResult OptimizeWholeGraph(const Graph& graph, const MemoryModel& model,
                                    std::span<const OpId> warm_order,
                                    const WholeGraphParams& params);

// The same on a worker thread with its own copies of the inputs, so that the caller answers an
// interrupt or the deadline at once: building and scaling a whole-graph model (millions of
// nonzeros) cannot be interrupted, and GLPK looks at its flags only between nodes. When the
// deadline expires first, the worker is told to stop and given `grace` seconds; if it has not
// finished then it is left to end on its own (it touches nothing of the caller's) and the
// result is empty. The params' stop flags are replaced by the worker's own.
std::optional<WholeGraphResult> OptimizeWholeGraphOnTime(
    const Graph& graph, const MemoryModel& model, std::span<const OpId> warm_order,
    const WholeGraphParams& params, const Deadline& deadline, double grace = 0.2);

}  // namespace roam::opt
