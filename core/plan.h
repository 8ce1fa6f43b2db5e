// A memory plan: an execution order plus an arena offset for every planned storage.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/types.h"

namespace roam {

struct Buffer {
  TensorId tensor = kNoTensor;  // root tensor of the storage (dense id)
  Bytes offset = 0;
  Bytes size = 0;  // aligned
  Step start = 0;
  Step end = 0;  // inclusive
  bool operator==(const Buffer&) const = default;
};

struct PlanSummary {
  int ops = 0;
  int storages = 0;  // planned storages
  Bytes persistent_bytes = 0;
  Bytes theoretical_peak = 0;
  Bytes actual_peak = 0;
  double fragmentation = 0.0;  // (actual - theoretical) / actual, 0 when actual is 0
  Bytes total_peak = 0;        // persistent + actual
  double seconds = 0.0;        // wall time spent planning
};

struct Plan {
  std::string graph;  // the graph's name
  Bytes alignment = kDefaultAlignment;
  std::vector<OpId> order;
  // Multi-stream plans: the step of each entry of `order` (core/steps.h); empty for a
  // single-stream plan, where order[k] runs alone at step k.
  std::vector<Step> steps;
  std::vector<Buffer> buffers;  // one per planned storage, in model.planned order
  PlanSummary summary;
};

// Assembles a plan from an order and one offset per planned storage (model.planned order),
// computing lifetimes and the summary, with `steps` (empty: single stream) for a multi-stream
// plan. Does not validate.
Plan AssemblePlan(const Graph& graph, const MemoryModel& model, std::vector<OpId> order,
                  std::span<const Bytes> offsets, double seconds, std::vector<Step> steps = {});

// Recomputes everything from the graph and returns the first violation, or empty when the
// plan is valid: order is a topological permutation, steps (when given) a valid assignment
// (core/steps.h), one buffer per planned storage with the
// right size and lifetime, aligned offsets, no overlap between buffers sharing a step, and a
// summary that matches (seconds excepted).
std::string ValidatePlan(const Graph& graph, const Plan& plan);

}  // namespace roam
