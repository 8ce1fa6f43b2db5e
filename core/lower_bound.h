// The certified lower bound on the theoretical peak (docs/memory-model.md, "Certified lower
// bound"): memory that every topological order must hold at once.
//
// A planned storage s is live at op v in *every* order when its root's producer is an
// ancestor-or-self of v (s exists once v runs) and s is an output or some op touching s is a
// descendant-or-self of v (s cannot be freed before v runs). The sum of those storages at v is
// v's forced residency; the bound is its maximum over all ops. It is exact on chains and on the
// forward/backward turn of training graphs, where the saved activations are all forced.
//
// Forced residency is computed for 64 ops at a time by one pass over the graph (ancestor and
// descendant sets as 64-bit masks): O(n + edges + touches) time and O(n + storages) memory per
// 64 ops. The maximum is found without evaluating every op: an op's forced bytes are at most
// the bytes resident at its step in any order (`upper`), so ops are evaluated in decreasing
// order of that upper bound until the next one cannot beat the best found. `max_evaluated`
// bounds the work (then the bound is still valid, only perhaps not the maximum: `exact` false).
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "core/deadline.h"
#include "core/graph.h"
#include "core/memory_model.h"
#include "core/types.h"

namespace roam {

struct ForcedParams {
  // Per op, bytes its forced residency cannot exceed (the bytes resident at its step in some
  // topological order; the minimum over several orders prunes best). Empty: the program
  // order's memory profile.
  std::span<const Bytes> upper;
  // Also evaluate every op whose upper bound exceeds this, even below the best found (remat's
  // cuts: every op forcing more than the budget). The default evaluates only what the maximum
  // needs.
  Bytes evaluate_above = std::numeric_limits<Bytes>::max();
  // Most ops evaluated, a bound on the work that does not depend on the machine: 16,384 ops
  // (256 passes) is a few hundred milliseconds at 90,000 ops; every preset needs far fewer.
  int max_evaluated = 16'384;
  // The run's deadline: once expired, no further pass starts (the bound so far stays valid).
  const Deadline* deadline = nullptr;
};

struct ForcedResidency {
  // Per op, its forced bytes where evaluated (`evaluated[v]`), else 0: a lower bound either way.
  std::vector<Bytes> per_op;
  std::vector<char> evaluated;
  // Per op, the upper bound used (ForcedParams::upper or the program order's profile).
  std::vector<Bytes> upper;
  Bytes bound = 0;    // max of per_op (0 for an empty graph): a valid lower bound
  OpId at = kNoOp;    // an op where the bound is reached
  bool exact = true;  // bound is the maximum over every op (the search was not cut short)
  int num_evaluated = 0;
};

ForcedResidency CertifiedLowerBound(const Graph& graph, const MemoryModel& model,
                                    const Dependencies& deps, const ForcedParams& params = {});

// The forced bytes of each of `ops` (any op ids, repeats allowed), 64 per pass.
std::vector<Bytes> ForcedBytes(const Graph& graph, const MemoryModel& model,
                               const Dependencies& deps, std::span<const OpId> ops);

// Evaluates the ops of `ops` not yet evaluated in `forced`, updating per_op and evaluated (not
// the bound). For callers that need some ops' exact values beyond those the maximum needed.
void EvaluateForced(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
                    std::span<const OpId> ops, ForcedResidency& forced);

}  // namespace roam
