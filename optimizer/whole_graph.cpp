#include "optimizer/whole_graph.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/deadline.h"

namespace roam::opt {
namespace {

// The order and layout results share these fields; value and warm_start are the peak or height.
template <typename IlpResult>
PartReport Report(const IlpResult& r, Bytes value, Bytes warm_start) {
  PartReport part;
  part.outcome = OutcomeOf(r.status, value, warm_start);
  part.status = r.status;
  part.value = value;
  part.lower_bound = r.lower_bound;
  part.warm_start = warm_start;
  part.gap = r.gap;
  part.seconds = r.seconds;
  part.lp_iterations = r.lp_iterations;
  part.nonzeros = r.nonzeros;
  part.work_limited = r.work_limited;
  part.note = r.note;
  return part;
}

// The ILP's steps renumbered without its empty steps (which hold nothing an adjacent step
// does not): plans' steps skip none.
std::vector<Step> DenseSteps(const std::vector<Step>& steps) {
  std::vector<Step> dense;
  for (size_t k = 0; k < steps.size(); ++k)
    dense.push_back(k == 0 ? 0 : dense.back() + (steps[k] != steps[k - 1] ? 1 : 0));
  return dense;
}

}  // namespace

WholeGraphResult OptimizeWholeGraph(const Graph& graph, const MemoryModel& model,
                                    std::span<const OpId> warm_order,
                                    const WholeGraphParams& params) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  WholeGraphResult result;

  ilp::OrderIlpParams order_params = params.order;
  order_params.solve.time_limit_s =
      std::max(0.0, params.time_limit_s * std::clamp(params.order_share, 0.0, 1.0));
  const Bytes warm_peak = TheoreticalPeak(graph, model, warm_order);
  if (warm_peak <= params.order_lower_bound) {
    // The warm start meets a proven bound: it is optimal, and there is nothing to solve.
    result.order.assign(warm_order.begin(), warm_order.end());
    result.order_part.outcome = Outcome::kOptimal;
    result.order_part.status = ilp::ModelStatus::kOptimal;
    result.order_part.value = result.order_part.warm_start = warm_peak;
    result.order_part.lower_bound = params.order_lower_bound;
    result.order_part.note = "the warm start meets the lower bound; no ILP was built";
  } else {
    order_params.solve.stop_at_objective = static_cast<double>(params.order_lower_bound);
    const Dependencies deps = BuildDependencies(graph);
    ilp::OrderIlpResult order =
        ilp::SolveOrderIlp(graph, model, deps, WholeGraph(graph, model), warm_order, order_params);
    result.order = order.order;
    result.steps = DenseSteps(order.steps);
    // Multi-stream: the value is the peak of the steps (the serialized order's may be lower).
    const Bytes peak = order_params.multi_stream
                           ? TheoreticalPeak(graph, model, result.order, result.steps)
                           : order.peak;
    result.order_part = Report(order, peak, order.warm_start_peak);
    if (peak <= params.order_lower_bound) {
      result.order_part.outcome = Outcome::kOptimal;  // the bound is the proof
      result.order_part.status = ilp::ModelStatus::kOptimal;
    }
  }

  if (order_params.multi_stream && result.steps.empty())
    for (size_t k = 0; k < result.order.size(); ++k) result.steps.push_back(static_cast<Step>(k));
  const auto intervals =
      PlannedIntervals(model, ComputeLifetimes(graph, model, result.order, result.steps));
  ilp::LayoutIlpParams layout_params = params.layout;
  layout_params.solve.time_limit_s = std::max(0.0, params.time_limit_s - SecondsSince(started));
  ilp::LayoutIlpResult layout = ilp::SolveLayoutIlp(intervals, model.alignment, layout_params);
  result.offsets = layout.offsets;
  result.layout_part = Report(layout, layout.height, layout.warm_start_height);
  return result;
}

std::optional<WholeGraphResult> OptimizeWholeGraphOnTime(const Graph& graph,
                                                         const MemoryModel& model,
                                                         std::span<const OpId> warm_order,
                                                         const WholeGraphParams& params,
                                                         const Deadline& deadline, double grace) {
  // Everything the worker reads is its own: an abandoned worker outlives this call.
  struct Job {
    Graph graph;
    MemoryModel model;
    std::vector<OpId> warm;
    WholeGraphParams params;
    std::atomic<bool> stop{false};
    std::mutex mutex;
    std::condition_variable finished;
    bool done = false;
    WholeGraphResult result;
    std::exception_ptr error;
  };
  auto job = std::make_shared<Job>();
  job->graph = graph;
  job->model = model;
  job->warm.assign(warm_order.begin(), warm_order.end());
  job->params = params;
  job->params.order.solve.stop = &job->stop;
  job->params.layout.solve.stop = &job->stop;
  std::thread worker([job] {
    try {
      job->result = OptimizeWholeGraph(job->graph, job->model, job->warm, job->params);
    } catch (...) {
      job->error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(job->mutex);
    job->done = true;
    job->finished.notify_all();
  });
  std::unique_lock<std::mutex> lock(job->mutex);
  // Look at the flags every 20 ms: an interrupt is answered well within a second.
  while (!job->finished.wait_for(lock, std::chrono::milliseconds(20), [&] { return job->done; }))
    if (deadline.Expired()) break;
  if (!job->done) {
    job->stop = true;
    job->finished.wait_for(lock, std::chrono::duration<double>(grace), [&] { return job->done; });
  }
  if (!job->done) {
    lock.unlock();
    worker.detach();
    return std::nullopt;
  }
  lock.unlock();
  worker.join();
  if (job->error) std::rethrow_exception(job->error);
  return std::move(job->result);
}

}  // namespace roam::opt
