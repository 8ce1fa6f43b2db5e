// Multi-stream steps (docs/formats.md, "Steps"): several ops may share a step and run
// concurrently, as MODeL's multi-streaming scenario and ROAM's figure 11c let them.
//
// A step assignment goes with an order: steps[k] is order[k]'s step. It is valid when it starts
// at 0, never decreases along the order and grows by at most one (no empty step), and every op's
// step is after each of its predecessors' steps, so the ops of one step are independent (a path
// between two ops passes through a direct predecessor, whose step is strictly lower).
#pragma once

#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/types.h"

namespace roam {

// Empty when `steps` is a valid assignment for `order` (a topological order of all ops);
// otherwise the first violation, naming the ops by their external ids.
std::string CheckSteps(const Graph& graph, const Dependencies& deps, std::span<const OpId> order,
                       std::span<const Step> steps);

struct SteppedOrder {
  std::vector<OpId> order;
  std::vector<Step> steps;
};

// As-soon-as-possible steps, as a framework issuing `order` onto several streams would run it:
// at each step, every op whose predecessors all ran at earlier steps, in `order`'s order, at
// most max_concurrency of them (0: unbounded). The ops come back sorted by step, ties in
// `order`'s order. With max_concurrency 1 it is `order` with one op per step.
SteppedOrder AsapSteps(const Graph& graph, const Dependencies& deps, std::span<const OpId> order,
                       int max_concurrency = 0);

// The largest number of ops sharing a step (1 for single stream, 0 for no ops).
int MaxConcurrency(std::span<const OpId> order, std::span<const Step> steps);

}  // namespace roam
