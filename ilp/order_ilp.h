// Order ILP (docs/ilp.md): the operator order of a subgraph that minimises its peak memory,
// MODeL's creation/preservation formulation at the storage level with the appendix-A
// reductions, exact graph contractions, symmetry breaking and a warm start.
//
// In: a finalized graph, its memory model and dependencies, one subgraph (a set of its ops and
// the storages crossing the subgraph's boundary), a warm-start order of the subgraph's ops.
// Out: a topological order of the subgraph's ops, its peak (including boundary memory) and
// the solver status, bound and gap.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/subgraph.h"
#include "core/types.h"
#include "ilp/glpk.h"

namespace roam::ilp {

// The subgraph to order and its boundary: core/subgraph.h (a partition Leaf is one).
using roam::Subgraph;

struct OrderIlpParams {
  SolveParams solve;
  // Several ops may share a step (MODeL's multi-stream mode); then contractions and symmetry
  // breaking are off, and the objective is the peak of concurrent steps.
  bool multi_stream = false;
  int multi_stream_steps = 0;  // steps in multi-stream mode; 0 = one per op
  // Multi-stream: the most ops one step may run; 0 = unbounded (MODeL's). The warm start is
  // packed within it, so with fewer steps than ops it must still fit.
  int max_concurrency = 0;
  // Merge ops that cannot change the peak into a neighbour (exact; docs/ilp.md).
  bool contract = true;
  // Order interchangeable ops by id (exact; docs/ilp.md).
  bool symmetry_breaking = true;
  // Larger models are not built and the (contracted) warm start is returned.
  std::int64_t max_nonzeros = 3'000'000;
};

struct OrderIlpResult {
  std::vector<OpId> order;  // the subgraph's ops, topological
  Bytes peak = 0;           // roam::SubgraphPeak(order)
  Bytes objective = 0;      // the ILP's objective for the returned solution (>= peak)
  Bytes lower_bound = 0;    // proven: no order has a lower peak
  Bytes warm_start_peak = 0;
  double gap = 0.0;  // (peak - lower_bound) / peak
  ModelStatus status = ModelStatus::kError;
  CallOutcome call = CallOutcome::kOk;
  bool model_built = false;      // false: nothing to decide, proven by bounds, or too large
  bool from_warm_start = false;  // GLPK found nothing better than the warm start
  // Model size after the reductions.
  int nodes = 0;       // ops left after contraction
  int contracted = 0;  // ops merged into a neighbour
  int symmetric = 0;   // ordering edges added by symmetry breaking
  int columns = 0, rows = 0;
  std::int64_t nonzeros = 0;
  std::vector<Step> steps;  // multi-stream: step of each op of `order`
  // GLPK's work (SolveResult): simplex iterations and branch-and-bound nodes. work_limited:
  // a limit that does not read the clock (GLPK's work limits, max_nonzeros) ended the search,
  // so the answer is the same on any machine.
  std::int64_t lp_iterations = 0;
  std::int64_t bb_nodes = 0;
  bool work_limited = false;
  double seconds = 0.0;
  std::string note;
};

// warm_start: a topological order of sub.ops, or empty for the graph's program order
// restricted to the subgraph. Throws std::invalid_argument for an inconsistent subgraph.
OrderIlpResult SolveOrderIlp(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
                             const Subgraph& sub, std::span<const OpId> warm_start,
                             const OrderIlpParams& params);

// Multi-stream peak of a step assignment (several ops per step): a storage is resident from
// the step creating it to the last step touching it. For tests and reports.
Bytes MultiStreamPeak(const Graph& graph, const MemoryModel& model, const Subgraph& sub,
                      std::span<const OpId> ops, std::span<const Step> steps, int num_steps);

}  // namespace roam::ilp
