#include "tests/remat/brute_force.h"

#include <algorithm>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "core/memory_model.h"
#include "core/types.h"

namespace roam::testing {
TrainingGraphOptions TinyTrainingGraphOptions() {
  TrainingGraphOptions o;
  o.layers = 2;
  o.max_paths = 1;
  o.branch_prob = 0;
  o.adam = false;
  o.bias_prob = 0;
  o.long_skip_prob = 0;
  return o;
}

std::vector<Graph> TinyRematGraphs(std::uint64_t seed) {
  std::vector<Graph> graphs;
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 8; ++trial) {
    std::vector<double> costs(9);
    for (double& c : costs) c = static_cast<double>(1 + rng() % 9);
    graphs.push_back(MlpChain(trial < 4 ? 3 : 4, costs));
  }
  for (int i = 0; i < 6; ++i) {
    Graph g = TrainingLikeGraph(rng, TinyTrainingGraphOptions());
    if (g.num_ops() <= 10) graphs.push_back(std::move(g));
  }
  return graphs;
}

Bytes SchedulePeak(const Graph& graph, std::span<const OpId> schedule, Bytes alignment) {
  remat::Rewritten r = remat::Rewrite(graph, schedule);
  MemoryModel m = BuildMemoryModel(r.graph, alignment);
  return TheoreticalPeak(r.graph, m, r.order);
}

void ForEachSchedule(const Graph& graph, int extra,
                     const std::function<void(const Schedule&)>& visit) {
  const int n = graph.num_ops();
  Schedule s;
  std::vector<int> count(U(n), 0);
  int done = 0;
  std::function<void(int)> dfs = [&](int left) {
    if (done == n) {
      if (remat::CheckSchedule(graph, s).empty()) visit(s);
    }
    for (OpId op = 0; op < n; ++op) {
      const bool repeat = count[U(op)] > 0;
      if (count[U(op)] >= 2 || (repeat && (left == 0 || !remat::IsRecomputable(graph, op))))
        continue;
      bool ready = true;
      for (TensorId t : graph.ops[U(op)].inputs) {
        OpId p = graph.tensors[U(t)].producer;
        ready = ready && (p == kNoOp || count[U(p)] > 0);
      }
      if (!ready) continue;
      // A finished schedule may only grow by ops still to come: stop after the last original.
      if (done == n) continue;
      s.push_back(op);
      ++count[U(op)];
      if (!repeat) ++done;
      dfs(repeat ? left - 1 : left);
      if (!repeat) --done;
      --count[U(op)];
      s.pop_back();
    }
  };
  dfs(extra);
}

double BruteForceCost(const Graph& graph, Bytes budget, int extra) {
  double best = std::numeric_limits<double>::infinity();
  ForEachSchedule(graph, extra, [&](const Schedule& s) {
    if (SchedulePeak(graph, s) <= budget)
      best = std::min(best, remat::detail::RecomputeCost(graph, s));
  });
  return best;
}

std::vector<std::pair<Bytes, double>> BruteForcePoints(const Graph& graph, int extra) {
  std::vector<std::pair<Bytes, double>> points;
  ForEachSchedule(graph, extra, [&](const Schedule& s) {
    points.emplace_back(SchedulePeak(graph, s), remat::detail::RecomputeCost(graph, s));
  });
  return points;
}

double CheapestWithin(std::span<const std::pair<Bytes, double>> points, Bytes budget) {
  double best = std::numeric_limits<double>::infinity();
  for (const auto& [peak, cost] : points)
    if (peak <= budget) best = std::min(best, cost);
  return best;
}

remat::detail::MethodResult Described(const Graph& graph, Schedule schedule,
                                      const remat::RematParams& params) {
  remat::detail::MethodResult r;
  r.method = "test";
  r.status = remat::Status::kFeasible;
  const remat::detail::Evaluated e = remat::detail::Evaluate(graph, schedule, params);
  r.peak = e.peak;
  r.recompute_cost = e.recompute_cost;
  r.schedule = std::move(schedule);
  return r;
}

}  // namespace roam::testing
