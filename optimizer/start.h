// The optimizer's first stage (docs/optimizer.md, pipeline steps 1-2): the baseline plans, the
// orders the pipeline may start from, and the certified lower bound.
//
// In: a finalized graph, its memory model and dependencies, the optimizer's params and the
// run's deadline. Out: PyTorch's plan (program order, caching allocator), the best baseline
// plan, every candidate starting order with its peak, and the bound. Under an expired deadline
// the stage stops after the first plan it can make (program order, best-fit), so an interrupt
// or a short limit still has a valid plan to return; `cut_short` says so.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/deadline.h"
#include "core/graph.h"
#include "core/lower_bound.h"
#include "core/memory_model.h"
#include "core/plan.h"
#include "optimizer/params.h"

namespace roam::opt {

struct NamedOrder {
  std::string name;  // "program", "lescea", ..., "+deferred-tails" appended when moved
  std::vector<OpId> order;
  Bytes peak = 0;  // theoretical
};

// Multi-stream (params.streams): the baseline plans run each order with as-soon-as-possible
// steps (core/steps.h, AsapSteps); the candidates stay single-stream orders, since the
// pipeline packs steps only at the end (optimizer/pack_steps.h), and the bound is the
// single-stream one, valid for steps too (serializing steps never raises the peak).
struct StartingPoint {
  PlanSummary pytorch;  // program order + caching allocator
  Plan best_plan;       // the best baseline plan: lowest actual peak, then theoretical
  std::string best_plan_order, best_plan_layout;
  std::vector<NamedOrder> candidates;  // in the order tried; the pipeline starts from `start`
  size_t start = 0;
  ForcedResidency forced;
  bool cut_short = false;  // the deadline struck: not every baseline was tried
};

StartingPoint ComputeStartingPoint(const Graph& graph, const MemoryModel& model,
                                   const Dependencies& deps, const OptimizerParams& params,
                                   const Deadline& deadline,
                                   const std::function<void(const char*)>& report = {});

}  // namespace roam::opt
