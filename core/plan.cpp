#include "core/plan.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/bytes.h"
#include "core/steps.h"
#include "core/types.h"

namespace roam {
namespace {

PlanSummary Summarize(const MemoryModel& model, Bytes theoretical, Bytes actual, int ops,
                      double seconds) {
  PlanSummary s;
  s.ops = ops;
  s.storages = static_cast<int>(model.planned.size());
  s.persistent_bytes = model.persistent_bytes;
  s.theoretical_peak = theoretical;
  s.actual_peak = actual;
  s.fragmentation =
      actual == 0 ? 0.0 : static_cast<double>(actual - theoretical) / static_cast<double>(actual);
  s.total_peak = model.persistent_bytes + actual;
  s.seconds = seconds;
  return s;
}
}  // namespace

Plan AssemblePlan(const Graph& graph, const MemoryModel& model, std::vector<OpId> order,
                  std::span<const Bytes> offsets, double seconds, std::vector<Step> steps) {
  Plan plan;
  plan.graph = graph.name;
  plan.alignment = model.alignment;
  auto lifetimes = ComputeLifetimes(graph, model, order, steps);
  auto intervals = PlannedIntervals(model, lifetimes);
  for (size_t i = 0; i < model.planned.size(); ++i) {
    const Storage& s = model.storages[U(model.planned[i])];
    plan.buffers.push_back({s.root, offsets[i], s.size, intervals[i].start, intervals[i].end});
  }
  plan.summary = Summarize(model, MaxLiveBytes(intervals), LayoutHeight(intervals, offsets),
                           graph.num_ops(), seconds);
  plan.order = std::move(order);
  plan.steps = std::move(steps);
  return plan;
}

std::string ValidatePlan(const Graph& graph, const Plan& plan) {
  std::ostringstream msg;
  if (plan.alignment <= 0 || plan.alignment > kMaxAlignment)
    return "alignment " + std::to_string(plan.alignment) + " is not in [1, " +
           std::to_string(kMaxAlignment) + "]";
  Dependencies deps = BuildDependencies(graph);
  if (auto problem = CheckTopological(graph, deps, plan.order); !problem.empty())
    return "order: " + problem;
  if (!plan.steps.empty())
    if (auto problem = CheckSteps(graph, deps, plan.order, plan.steps); !problem.empty())
      return "steps: " + problem;
  MemoryModel model = BuildMemoryModel(graph, plan.alignment);
  auto lifetimes = ComputeLifetimes(graph, model, plan.order, plan.steps);

  // Match buffers to planned storages by root tensor.
  std::vector<int> buffer_of(model.storages.size(), -1);
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const Buffer& buf = plan.buffers[b];
    if (buf.tensor < 0 || buf.tensor >= graph.num_tensors()) {
      msg << "buffer " << b << " names a tensor that is not in the graph";
      return msg.str();
    }
    ExternalId ext = graph.tensors[U(buf.tensor)].ext_id;
    StorageId sid = model.storage_of[U(buf.tensor)];
    const Storage& s = model.storages[U(sid)];
    if (s.root != buf.tensor) {
      msg << "buffer for tensor " << ext << " must be keyed by its storage root, tensor "
          << graph.tensors[U(s.root)].ext_id;
      return msg.str();
    }
    if (!s.planned()) {
      msg << "buffer for tensor " << ext << ": its storage is "
          << (s.persistent ? "persistent" : "empty") << " and must not be placed in the arena";
      return msg.str();
    }
    if (buffer_of[U(sid)] != -1) {
      msg << "tensor " << ext << " has more than one buffer";
      return msg.str();
    }
    buffer_of[U(sid)] = static_cast<int>(b);
    if (buf.size != s.size) {
      msg << "buffer for tensor " << ext << " has size " << buf.size << ", expected " << s.size
          << " (aligned to " << plan.alignment << ")";
      return msg.str();
    }
    const Lifetime& l = lifetimes[U(sid)];
    if (buf.start != l.start || buf.end != l.end) {
      msg << "buffer for tensor " << ext << " has lifetime " << buf.start << ".." << buf.end
          << ", expected " << l.start << ".." << l.end;
      return msg.str();
    }
  }
  for (StorageId sid : model.planned) {
    if (buffer_of[U(sid)] == -1) {
      msg << "planned storage of tensor " << graph.tensors[U(model.storages[U(sid)].root)].ext_id
          << " has no buffer";
      return msg.str();
    }
  }

  std::vector<Interval> intervals;
  std::vector<Bytes> offsets;
  for (const Buffer& b : plan.buffers) {
    intervals.push_back({b.size, b.start, b.end});
    offsets.push_back(b.offset);
  }
  if (auto problem = CheckLayout(intervals, offsets, plan.alignment); !problem.empty()) {
    // Re-express buffer indices as tensor ids for the user.
    msg << "layout: " << problem << " (buffer i is entry i of \"buffers\")";
    return msg.str();
  }

  const PlanSummary expect = Summarize(model, MaxLiveBytes(intervals),
                                       LayoutHeight(intervals, offsets), graph.num_ops(), 0.0);
  const PlanSummary& got = plan.summary;
  auto mismatch = [&](const char* field, auto have, auto want) {
    msg << "summary." << field << " is " << have << ", recomputed " << want;
    return msg.str();
  };
  if (got.ops != expect.ops) return mismatch("ops", got.ops, expect.ops);
  if (got.storages != expect.storages) return mismatch("storages", got.storages, expect.storages);
  if (got.persistent_bytes != expect.persistent_bytes)
    return mismatch("persistent_bytes", got.persistent_bytes, expect.persistent_bytes);
  if (got.theoretical_peak != expect.theoretical_peak)
    return mismatch("theoretical_peak", got.theoretical_peak, expect.theoretical_peak);
  if (got.actual_peak != expect.actual_peak)
    return mismatch("actual_peak", got.actual_peak, expect.actual_peak);
  if (got.total_peak != expect.total_peak)
    return mismatch("total_peak", got.total_peak, expect.total_peak);
  if (std::abs(got.fragmentation - expect.fragmentation) > 1e-6)
    return mismatch("fragmentation", got.fragmentation, expect.fragmentation);
  return {};
}

}  // namespace roam
