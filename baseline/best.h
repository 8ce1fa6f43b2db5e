// The best baseline plan (docs/baselines.md, "The best baseline plan"): the one rule by which the
// optimizer picks the plan it is never worse than, and batch/ reports as the best heuristic.
//
// In: a finalized graph, its memory model, candidate orders. Out: the plan of the lowest actual
// peak, then theoretical peak, over every candidate order with the best-fit and llfb layouts
// (the earlier candidate, then best-fit, on ties), and the names of its order and layout.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/plan.h"

namespace roam {

class BestBaseline {
 public:
  // Plans `order` (whose planned intervals are `intervals`) with best-fit and then llfb and
  // keeps either when it beats the best so far. `stop`, asked after each plan, ends the offer
  // early (the first plan is made whatever it says). `seconds` goes into the plans' summaries.
  // `steps` (empty: single stream) are the order's multi-stream steps (core/steps.h), which
  // the intervals were computed with.
  void Offer(const Graph& graph, const MemoryModel& model, std::string_view order_name,
             const std::vector<OpId>& order, std::span<const Interval> intervals, double seconds,
             const std::function<bool()>& stop = {}, std::span<const Step> steps = {});

  bool empty() const { return plan_.order.empty(); }
  const Plan& plan() const { return plan_; }
  Plan& plan() { return plan_; }
  const std::string& order_name() const { return order_; }
  const std::string& layout_name() const { return layout_; }
  std::string name() const { return order_ + "+" + layout_; }

 private:
  Plan plan_;
  std::string order_, layout_;
};

// The best baseline over the program order and the greedy orders (lescea, xla-list, xla-dfs),
// in that order: what the optimizer starts from when no deadline cuts its baselines short.
// multi_stream: each order runs with as-soon-as-possible steps (core/steps.h, AsapSteps), at
// most max_concurrency ops per step (0: unbounded), and the plans carry those steps.
BestBaseline BestBaselinePlan(const Graph& graph, const MemoryModel& model,
                              bool multi_stream = false, int max_concurrency = 0);

}  // namespace roam
