// Multi-stream packing (docs/optimizer.md, "Multi-stream"): a single-stream plan's ops grouped
// into concurrent steps without raising its peak or breaking its layout.
//
// In: a valid plan (order and offsets; its steps, if any, are ignored: serial lifetimes lie
// within step lifetimes, so its layout is valid serially) and the most ops a step may run (0:
// unbounded). Out: the same order and offsets with steps: walking the order, an op joins the
// current step when it depends on none of the step's ops, the step holds fewer than
// max_concurrency ops, the step's resident bytes stay within the plan's theoretical peak, and
// none of the op's new storages overlaps in address a storage that died earlier in the step.
// So the packed plan has the same theoretical and actual peak and is valid by construction.
//
// Why packing rather than a multi-stream order ILP per leaf: any step assignment serializes
// (its ops in step order, one per step) into a single-stream order whose peak is no higher, so
// the best multi-stream peak is the best single-stream peak; the single-stream ILP, with its
// exact contractions and symmetry breaking, reaches it faster, and packing then keeps that peak.
#pragma once

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/plan.h"

namespace roam::opt {

Plan PackSteps(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
               const Plan& plan, int max_concurrency);

}  // namespace roam::opt
