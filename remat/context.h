// What a remat plan computes once and every method reads (docs/remat.md, "Methods"): the
// graph's memory model and op costs, the base schedule, the reference peaks and cost, and the
// partition of the base schedule (on first use; none where the order has no partition).
// Not part of the stage's interface.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/deadline.h"
#include "core/memory_model.h"
#include "partition/partition.h"
#include "remat/internal.h"

namespace roam::remat::detail {

class Context {
 public:
  // start: params.base_order on graph.
  Context(const Graph& graph, const RematParams& params, Deadline deadline = {});
  Context(const Graph& graph, const RematParams& params, Schedule start, Deadline deadline = {});

  const Graph& graph;
  MemoryModel model;          // of graph at params.alignment
  std::vector<double> costs;  // per op: OpCost
  Schedule start;             // where every method starts
  Bytes no_remat_peak = 0;    // theoretical peak of start
  Bytes peak_lower_bound = 0;
  double original_cost = 0;  // TotalCost
  // The plan's (or sweep's) wall-clock cap; every search is bounded by work first.
  Deadline deadline;

  // The partition of start, computed on the first call; nullopt where the order has none.
  const std::optional<SubgraphTree>& Partition() const;

  // Of params.start_orders, those whose theoretical peak is below start's, each with a context
  // of its own (params with that base order), lowest peak first; then (start_ties) those of a
  // different schedule at start's peak; then (start_as_given) the
  // base order as the baseline makes it, where start is it with its weight updates placed.
  // Built on the first call, so a sweep's budgets share them. params must be those this
  // context was built with.
  struct Start {
    RematParams params;
    std::unique_ptr<const Context> context;
  };
  const std::vector<Start>& OtherStarts(const RematParams& params) const;

 private:
  mutable bool partitioned_ = false;
  mutable std::optional<SubgraphTree> partition_;
  mutable std::optional<std::vector<Start>> other_starts_;
};

// Runs the improver of that name (RematParams: kImproverNames) on incumbent, as a preset runs
// it, to deadline; named: as `--method NAME` would (the witness then computes its compute
// bound). For the contract every improver is held to (tests/remat/improver_test.cpp).
MethodResult Improve(std::string_view name, const Context& ctx, const RematParams& params,
                     const MethodResult& incumbent, Bytes target, const Deadline& deadline);

}  // namespace roam::remat::detail
