// The certified lower bound on the theoretical peak (docs/memory-model.md, "Certified lower
// bound"): memory that every topological order must hold at once.
//
// A planned storage s is live at op v in *every* order when its root's producer is an
// ancestor-or-self of v (s exists once v runs) and s is an output or some op touching s is a
// descendant-or-self of v (s cannot be freed before v runs). Summing those storages at each op
// and taking the maximum gives a bound no order can beat. It is exact on chains and on the
// forward/backward turn of training graphs, where the saved activations are all forced.
//
// In: a finalized graph, its memory model and dependencies. Out: per op the forced bytes, the
// bound (their maximum) and an op where it is reached. Time O(n^2/64 + touches * n/64), memory
// two n x n bit matrices (about 130 MB for 23,000 ops).
#pragma once

#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/types.h"

namespace roam {

struct ForcedResidency {
  std::vector<Bytes> per_op;  // planned bytes live at each op in every topological order
  Bytes bound = 0;            // max of per_op (0 for an empty graph)
  OpId at = kNoOp;            // an op where the bound is reached
};

ForcedResidency CertifiedLowerBound(const Graph& graph, const MemoryModel& model,
                                    const Dependencies& deps);

}  // namespace roam
