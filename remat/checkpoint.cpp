// Chen et al.'s sqrt(n) segment checkpointing, as a remat schedule.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/types.h"
#include "partition/partition.h"
#include "remat/internal.h"

namespace roam::remat::detail {
namespace {

// The schedule with segments [cuts[j], cuts[j+1]) of the forward list recomputed.
Schedule Segmented(const Graph& graph, const Dependencies& deps, const Schedule& start,
                   const std::vector<OpId>& fwd, const std::vector<char>& is_forward,
                   const std::vector<size_t>& cuts, const RematParams& params) {
  std::vector<Step> position(U(graph.num_ops()));
  for (size_t s = 0; s < start.size(); ++s) position[U(start[s])] = static_cast<Step>(s);
  std::vector<int> segment(U(graph.num_ops()), -1);
  for (size_t j = 0; j + 1 < cuts.size(); ++j)
    for (size_t i = cuts[j]; i < cuts[j + 1]; ++i) segment[U(fwd[i])] = static_cast<int>(j);
  std::vector<std::pair<Step, std::vector<OpId>>> plans;  // per segment: where, what
  for (size_t j = 0; j + 1 < cuts.size(); ++j) {
    const OpId last = fwd[cuts[j + 1] - 1];
    // Segment outputs the backward reads, other than the boundary's.
    Step first_use = std::numeric_limits<Step>::max();
    std::vector<OpId> need;
    for (size_t i = cuts[j]; i < cuts[j + 1]; ++i) {
      const OpId op = fwd[i];
      if (op == last || !IsRecomputable(graph, op, params.rule)) continue;
      bool read_later = false;
      for (TensorId t : graph.ops[U(op)].outputs)
        for (OpId c : graph.tensors[U(t)].consumers)
          if (!is_forward[U(c)]) {
            read_later = true;
            first_use = std::min(first_use, position[U(c)]);
          }
      if (read_later) need.push_back(op);
    }
    if (need.empty()) continue;
    // Their ancestors inside the segment, recomputable ones only (others are read as kept).
    std::vector<char> in(U(graph.num_ops()), 0);
    std::vector<OpId> stack = need;
    for (OpId op : need) in[U(op)] = 1;
    while (!stack.empty()) {
      OpId v = stack.back();
      stack.pop_back();
      for (OpId p : deps.Preds(v))
        if (!in[U(p)] && segment[U(p)] == static_cast<int>(j) && p != last &&
            IsRecomputable(graph, p, params.rule)) {
          in[U(p)] = 1;
          stack.push_back(p);
        }
    }
    std::vector<OpId> ops;
    for (size_t i = cuts[j]; i < cuts[j + 1]; ++i)
      if (in[U(fwd[i])]) ops.push_back(fwd[i]);
    plans.emplace_back(first_use, std::move(ops));
  }
  std::vector<std::vector<OpId>> inserts(start.size() + 1);
  auto build = [&] {
    Schedule trial;
    for (size_t s = 0; s <= start.size(); ++s) {
      trial.insert(trial.end(), inserts[s].begin(), inserts[s].end());
      if (s < start.size()) trial.push_back(start[s]);
    }
    return trial;
  };
  for (auto& [at, ops] : plans) inserts[U(at)].insert(inserts[U(at)].end(), ops.begin(), ops.end());
  Schedule all = build();
  if (CheckSchedule(graph, all, params.rule).empty()) return all;
  // Some segment cannot be recomputed safely (it would read a value overwritten in place):
  // add the segments one by one, keeping those that can.
  for (auto& slot : inserts) slot.clear();
  Schedule accepted = start;
  for (auto& [at, ops] : plans) {
    auto& slot = inserts[U(at)];
    const size_t before = slot.size();
    slot.insert(slot.end(), ops.begin(), ops.end());
    Schedule trial = build();
    if (CheckSchedule(graph, trial, params.rule).empty())
      accepted = std::move(trial);
    else
      slot.resize(before);
  }
  return accepted;
}

}  // namespace

std::vector<char> ForwardOps(const Graph& graph, const Schedule& start, const RematParams& params) {
  std::vector<char> forward(U(graph.num_ops()), 0);
  bool any = false;
  for (OpId op = 0; op < graph.num_ops(); ++op) {
    forward[U(op)] = graph.ops[U(op)].phase == Phase::kForward;
    any = any || graph.ops[U(op)].phase != Phase::kUnknown;
  }
  if (!any) {
    Evaluated e = Evaluate(graph, start, params);
    for (Step s = 0; s <= e.peak_step; ++s) forward[U(start[U(s)])] = 1;
  }
  return forward;
}

std::vector<MethodResult> CheckpointOptions(const Graph& graph, const Schedule& start,
                                            const RematParams& params, PartitionArg partition) {
  const std::vector<char> is_forward = ForwardOps(graph, start, params);
  std::vector<OpId> fwd;
  for (OpId op : start)
    if (is_forward[U(op)]) fwd.push_back(op);
  const Dependencies deps = BuildDependencies(graph);
  std::vector<MethodResult> options;
  auto add = [&](Schedule s) {
    Evaluated e = Evaluate(graph, s, params);
    MethodResult r;
    r.method = "checkpoint";
    r.schedule = std::move(s);
    r.peak = e.peak;
    r.recompute_cost = e.recompute_cost;
    options.push_back(std::move(r));
  };
  add(start);
  const size_t m = fwd.size();
  const auto max_k = static_cast<size_t>(
      std::ceil(params.checkpoint.max_segments_factor * std::sqrt(static_cast<double>(m))));
  const bool by_ops = params.checkpoint.cuts != "insensitive";
  const bool by_boundaries = params.checkpoint.cuts != "ops";
  // Chen et al. cut at the forward's memory-insensitive ops: there only the op's own output
  // is live, so a segment's checkpoint is all it leaves behind. The partition finds them; a
  // cut after such an op keeps its output.
  std::vector<size_t> boundaries;  // cut positions in fwd: after an insensitive op
  std::vector<double> weight;      // per cut position: forward bytes made before it
  if (by_boundaries && m > 0) {
    std::optional<SubgraphTree> own;
    if (partition == nullptr) {
      own = PartitionOf(graph, BuildMemoryModel(graph, params.alignment), start);
      partition = &own;
    }
    // Without a partition of this order: the op-count cuts only.
    if (partition->has_value()) {
      const SubgraphTree& tree = **partition;
      std::vector<char> insensitive(U(graph.num_ops()), 0);
      for (OpId op : tree.insensitive) insensitive[U(op)] = 1;
      weight.assign(m + 1, 0.0);
      for (size_t i = 0; i < m; ++i) {
        double bytes = 0;
        for (TensorId t : graph.ops[U(fwd[i])].outputs)
          if (graph.tensors[U(t)].alias_of == kNoTensor)
            bytes += static_cast<double>(graph.tensors[U(t)].size);
        weight[i + 1] = weight[i] + bytes;
        if (insensitive[U(fwd[i])] && i + 1 < m) boundaries.push_back(i + 1);
      }
    }
  }
  // Segment counts in a geometric progression (x1.25): the curve of peak against k is flat
  // enough that every k is not worth an evaluation of the whole graph each.
  for (size_t k = 1; k <= std::min(max_k, m); k = std::max(k + 1, k * 5 / 4)) {
    if (by_ops) {
      std::vector<size_t> cuts;
      for (size_t j = 0; j <= k; ++j) cuts.push_back(j * m / k);
      cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
      add(Segmented(graph, deps, start, fwd, is_forward, cuts, params));
    }
    if (!boundaries.empty() && k <= boundaries.size() + 1) {
      // k segments evenly by the forward bytes between them: the boundary nearest each
      // j/k of the bytes (the segments' saved activations are what the backward holds).
      std::vector<size_t> cuts = {0};
      for (size_t j = 1; j < k; ++j) {
        const double target = weight[m] * static_cast<double>(j) / static_cast<double>(k);
        auto it = std::lower_bound(boundaries.begin(), boundaries.end(), target,
                                   [&](size_t b, double w) { return weight[b] < w; });
        if (it == boundaries.end() ||
            (it != boundaries.begin() && target - weight[*(it - 1)] < weight[*it] - target))
          --it;
        if (*it > cuts.back()) cuts.push_back(*it);
      }
      cuts.push_back(m);
      add(Segmented(graph, deps, start, fwd, is_forward, cuts, params));
    }
  }
  return options;
}

MethodResult PickCheckpoint(std::span<const MethodResult> options, Bytes budget) {
  MethodResult best;
  best.method = "checkpoint";
  best.status = Status::kInfeasible;
  best.peak = std::numeric_limits<Bytes>::max();
  for (const MethodResult& o : options) {
    const bool fits = o.peak <= budget, best_fits = best.peak <= budget;
    if ((fits && (!best_fits || o.recompute_cost < best.recompute_cost)) ||
        (!fits && !best_fits && o.peak < best.peak)) {
      best = o;
      best.status = fits ? Status::kFeasible : Status::kInfeasible;
    }
  }
  return best;
}

MethodResult Checkpoint(const Graph& graph, const Schedule& start, Bytes budget,
                        const RematParams& params, PartitionArg partition) {
  return PickCheckpoint(CheckpointOptions(graph, start, params, partition), budget);
}

}  // namespace roam::remat::detail
