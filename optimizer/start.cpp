#include "optimizer/start.h"

#include <algorithm>
#include <limits>

#include "baseline/best.h"
#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/steps.h"
#include "core/types.h"
#include "partition/partition.h"

namespace roam::opt {
namespace {

const char* const kGreedyOrders[] = {"lescea", "xla-list", "xla-dfs"};

class Starter {
 public:
  Starter(const Graph& graph, const MemoryModel& model, const OptimizerParams& params,
          const Deadline& deadline)
      : graph_(graph),
        model_(model),
        params_(params),
        deadline_(deadline),
        upper_(U(graph.num_ops()), std::numeric_limits<Bytes>::max()) {}

  // Adds a candidate order; its profile tightens the bound's upper bounds, and with `layouts`
  // its best-fit and llfb plans compete for the best baseline plan.
  void Add(std::string name, std::vector<OpId> order, bool layouts) {
    const auto lifetimes = ComputeLifetimes(graph_, model_, order);
    const auto profile = MemoryProfile(model_, lifetimes, static_cast<int>(order.size()));
    Bytes peak = 0;
    for (size_t s = 0; s < order.size(); ++s) {
      upper_[U(order[s])] = std::min(upper_[U(order[s])], profile[s]);
      peak = std::max(peak, profile[s]);
    }
    // The first plan is made whatever the deadline: it is what an interrupt returns.
    // Multi-stream: the order run with as-soon-as-possible steps, as a framework with several
    // streams would run it.
    if (layouts) {
      const SteppedOrder run = Stepped(order);
      const auto intervals = PlannedIntervals(
          model_,
          run.steps.empty() ? lifetimes : ComputeLifetimes(graph_, model_, run.order, run.steps));
      best_.Offer(
          graph_, model_, name, run.order, intervals, deadline_.Elapsed(),
          [&] { return deadline_.Expired(); }, run.steps);
    }
    out_.candidates.push_back({std::move(name), std::move(order), peak});
  }

  StartingPoint Run(const Dependencies& deps, const std::function<void(const char*)>& report) {
    if (report) report("baselines");
    deps_ = &deps;
    const std::vector<OpId>& program = graph_.program_order;
    {
      const SteppedOrder run = Stepped(program);
      const auto intervals =
          PlannedIntervals(model_, ComputeLifetimes(graph_, model_, run.order, run.steps));
      out_.pytorch = AssemblePlan(graph_, model_, run.order,
                                  PlaceBuffers("pytorch", intervals, params_.alignment),
                                  deadline_.Elapsed(), run.steps)
                         .summary;
    }
    Add("program", program, true);
    for (const char* name : kGreedyOrders) {
      if (deadline_.Expired()) break;
      Add(name, ScheduleOrder(name, graph_, model_), true);
    }
    // The pipeline may also start from each order with the weight updates' temporary-making
    // tails moved after the activation peak (partition/partition.h, UpdatePlacement::kSplit):
    // nothing depends on a tail but its own ops, so the order stays topological.
    if (params_.defer_update_tails && !deadline_.Expired()) {
      PartitionParams split = params_.partition;
      split.update_placement = UpdatePlacement::kSplit;
      std::vector<char> is_tail(U(graph_.num_ops()), 0);
      for (const WeightUpdateBranch& b : PartitionGraph(graph_, model_, program, split).branches)
        if (b.tail)
          for (OpId op : b.ops) is_tail[U(op)] = 1;
      const size_t count = out_.candidates.size();
      for (size_t c = 0; c < count && !deadline_.Expired(); ++c) {
        std::vector<OpId> order;
        for (int pass = 0; pass < 2; ++pass)
          for (OpId op : out_.candidates[c].order)
            if (is_tail[U(op)] == pass) order.push_back(op);
        if (order != out_.candidates[c].order)
          Add(out_.candidates[c].name + "+deferred-tails", std::move(order), false);
      }
    }
    out_.cut_short = deadline_.Expired();
    out_.best_plan = std::move(best_.plan());
    out_.best_plan_order = best_.order_name();
    out_.best_plan_layout = best_.layout_name();
    for (size_t c = 0; c < out_.candidates.size(); ++c)
      if (out_.candidates[c].peak < out_.candidates[out_.start].peak) out_.start = c;

    if (report) report("lower bound");
    ForcedParams forced;
    forced.upper = upper_;
    forced.deadline = &deadline_;
    out_.forced = CertifiedLowerBound(graph_, model_, deps, forced);
    return std::move(out_);
  }

 private:
  // The order as the scenario runs it: alone per step, or with ASAP steps.
  SteppedOrder Stepped(const std::vector<OpId>& order) const {
    if (params_.streams == Streams::kSingle) return {order, {}};
    return AsapSteps(graph_, *deps_, order, params_.max_concurrency);
  }

  const Graph& graph_;
  const Dependencies* deps_ = nullptr;
  const MemoryModel& model_;
  const OptimizerParams& params_;
  const Deadline& deadline_;
  std::vector<Bytes> upper_;  // per op: the least bytes resident at its step in any candidate
  BestBaseline best_;
  StartingPoint out_;
};

}  // namespace

StartingPoint ComputeStartingPoint(const Graph& graph, const MemoryModel& model,
                                   const Dependencies& deps, const OptimizerParams& params,
                                   const Deadline& deadline,
                                   const std::function<void(const char*)>& report) {
  return Starter(graph, model, params, deadline).Run(deps, report);
}

}  // namespace roam::opt
