// The remat context (remat/context.h): what a plan computes once and every method reads.
#include "remat/context.h"

#include <algorithm>
#include <stdexcept>

#include "baseline/orders.h"
#include "remat/bound.h"
#include "remat/model.h"

namespace roam::remat::detail {

std::optional<SubgraphTree> PartitionOf(const Graph& graph, const MemoryModel& model,
                                        const Schedule& start) {
  try {
    return PartitionGraph(graph, model, start);
  } catch (const std::invalid_argument&) {
    return std::nullopt;  // no partition of this order
  }
}

Context::Context(const Graph& g, const RematParams& params, Deadline d)
    : Context(g, params, BaseSchedule(g, params), std::move(d)) {}

Context::Context(const Graph& g, const RematParams& params, Schedule s, Deadline d)
    : graph(g),
      model(BuildMemoryModel(g, params.alignment)),
      costs(OpCosts(g)),
      start(std::move(s)),
      no_remat_peak(TheoreticalPeak(g, model, start)),
      peak_lower_bound(PeakLowerBound(g, params)),
      original_cost(TotalCost(g)),
      deadline(std::move(d)) {}

namespace {

// Whether an order already listed plans from schedule.
bool Repeats(const std::vector<Context::Start>& starts, const Schedule& schedule) {
  return std::any_of(starts.begin(), starts.end(),
                     [&](const Context::Start& s) { return s.context->start == schedule; });
}

}  // namespace

const std::vector<Context::Start>& Context::OtherStarts(const RematParams& params) const {
  if (!other_starts_) {
    other_starts_.emplace();
    for (const std::string& order : params.start_orders) {
      // The base order, and an order listed twice, would plan the same again (checked first:
      // making an order costs more than comparing names).
      if (order == params.base_order ||
          std::any_of(other_starts_->begin(), other_starts_->end(),
                      [&](const Start& s) { return s.params.base_order == order; }))
        continue;
      Schedule schedule = StartOrder(order, graph, model, params);
      const Bytes peak = TheoreticalPeak(graph, model, schedule);
      if (peak > no_remat_peak || (peak == no_remat_peak && !params.start_ties)) continue;
      // An order the baseline makes the same as one planned from would plan the same again.
      if (schedule == start || Repeats(*other_starts_, schedule)) continue;
      Start s{params, nullptr};
      s.params.base_order = order;
      // Tried from this context's base order already, with the same answer.
      s.params.fit.reorder_orders.clear();
      s.context = std::make_unique<const Context>(graph, s.params, std::move(schedule), deadline);
      other_starts_->push_back(std::move(s));
    }
    std::stable_sort(other_starts_->begin(), other_starts_->end(),
                     [](const Start& a, const Start& b) {
                       return a.context->no_remat_peak < b.context->no_remat_peak;
                     });
    // Last (start_as_given), the base order as the baseline makes it, where its weight updates
    // were placed.
    if (params.start_as_given && !params.update_placements.empty()) {
      Start s{params, nullptr};
      s.params.update_placements.clear();
      s.params.fit.reorder_orders.clear();
      Schedule given = ScheduleOrder(params.base_order, graph, model);
      if (given != start && !Repeats(*other_starts_, given)) {
        s.context = std::make_unique<const Context>(graph, s.params, std::move(given), deadline);
        other_starts_->push_back(std::move(s));
      }
    }
  }
  return *other_starts_;
}

const std::optional<SubgraphTree>& Context::Partition() const {
  if (!partitioned_) {
    partition_ = PartitionOf(graph, model, start);
    partitioned_ = true;
  }
  return partition_;
}

}  // namespace roam::remat::detail
