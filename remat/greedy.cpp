// The greedy baseline and the evaluation every method shares.
#include <algorithm>
#include <limits>

#include "remat/internal.h"

namespace roam::remat::detail {
namespace {
size_t U(int i) { return static_cast<size_t>(i); }

struct Candidate {
  double score = 0;
  Step at = 0;            // insert the copies before this step
  std::vector<OpId> ops;  // original ops to recompute, in order
};
// Evictions made early for one peak may be unnecessary once later ones reshaped the profile:
// drop recomputations, most expensive first, while the schedule stays within the budget.
void Prune(const Graph& graph, Bytes budget, const RematParams& params, MethodResult& result) {
  std::vector<std::pair<double, size_t>> repeats;  // (cost, position)
  std::vector<char> seen(U(graph.num_ops()), 0);
  for (size_t i = 0; i < result.schedule.size(); ++i) {
    const OpId op = result.schedule[i];
    if (seen[U(op)]) repeats.emplace_back(OpCost(graph, op), i);
    seen[U(op)] = 1;
  }
  std::stable_sort(repeats.begin(), repeats.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  if (static_cast<int>(repeats.size()) > params.greedy_prune_attempts)
    repeats.resize(static_cast<size_t>(params.greedy_prune_attempts));
  std::vector<size_t> removed;  // positions already dropped, to shift the later ones
  for (const auto& [cost, position] : repeats) {
    if (cost <= 0) break;
    size_t shift = 0;
    for (size_t r : removed) shift += r < position ? 1 : 0;
    Schedule trial = result.schedule;
    trial.erase(trial.begin() + static_cast<std::ptrdiff_t>(position - shift));
    if (!CheckSchedule(graph, trial, params.rule).empty()) continue;
    Evaluated e = Evaluate(graph, trial, params);
    if (e.peak > budget) continue;
    result.schedule = std::move(trial);
    result.peak = e.peak;
    result.recompute_cost = e.recompute_cost;
    removed.push_back(position);
  }
}

}  // namespace

double RecomputeCost(const Graph& graph, std::span<const OpId> schedule) {
  std::vector<char> seen(U(graph.num_ops()), 0);
  double cost = 0;
  for (OpId op : schedule) {
    if (seen[U(op)]) cost += OpCost(graph, op);
    seen[U(op)] = 1;
  }
  return cost;
}

Evaluated Evaluate(const Graph& graph, std::span<const OpId> schedule, const RematParams& params) {
  Evaluated e;
  e.rewritten = Rewrite(graph, schedule, params.rule);
  e.model = BuildMemoryModel(e.rewritten.graph, params.alignment);
  e.lifetimes = ComputeLifetimes(e.rewritten.graph, e.model, e.rewritten.order);
  e.profile = MemoryProfile(e.model, e.lifetimes, static_cast<int>(e.rewritten.order.size()));
  for (size_t s = 0; s < e.profile.size(); ++s)
    if (e.profile[s] > e.peak) {
      e.peak = e.profile[s];
      e.peak_step = static_cast<Step>(s);
    }
  e.recompute_cost = RecomputeCost(graph, schedule);
  return e;
}

MethodResult Greedy(const Graph& graph, Schedule schedule, Bytes budget,
                    const RematParams& params) {
  MethodResult best;
  best.method = "greedy";
  best.status = "infeasible";
  best.peak = std::numeric_limits<Bytes>::max();
  int stalled = 0;
  for (int iteration = 0;; ++iteration) {
    Evaluated e = Evaluate(graph, schedule, params);
    stalled = e.peak < best.peak ? 0 : stalled + 1;
    if (e.peak < best.peak ||
        (e.peak <= budget && best.peak <= budget && e.recompute_cost < best.recompute_cost)) {
      best.peak = e.peak;
      best.schedule = schedule;
      best.recompute_cost = e.recompute_cost;
    }
    if (e.peak <= budget) {
      best.status = "feasible";
      Prune(graph, budget, params, best);
      return best;
    }
    if (iteration >= params.greedy_max_steps || stalled > params.greedy_stall_steps) return best;

    const Graph& g = e.rewritten.graph;
    const MemoryModel& m = e.model;
    const std::vector<OpId>& order = e.rewritten.order;
    const Step sp = e.peak_step;
    const auto num_steps = static_cast<Step>(order.size());
    std::vector<Step> position(g.ops.size());
    for (Step s = 0; s < num_steps; ++s) position[U(order[U(s)])] = s;
    std::vector<char> touched_now(m.storages.size(), 0);
    for (StorageId sid : m.Touches(order[U(sp)])) touched_now[U(sid)] = 1;

    std::vector<Candidate> candidates;
    for (StorageId sid : m.planned) {
      const Storage& st = m.storages[U(sid)];
      const Lifetime& life = e.lifetimes[U(sid)];
      if (st.output || touched_now[U(sid)] || life.start > sp || life.end <= sp) continue;
      // The steps that use the storage: the last before the peak and the first after it.
      Step prev = life.start, next = std::numeric_limits<Step>::max();
      std::vector<std::pair<Step, OpId>> producers;
      bool ok = true;
      for (TensorId t : st.members) {
        const Tensor& tensor = g.tensors[U(t)];
        const Step p = position[U(tensor.producer)];
        if (p < sp) {
          const OpId origin = e.rewritten.origin[U(tensor.producer)];
          if (!IsRecomputable(graph, origin, params.rule)) ok = false;
          producers.emplace_back(p, origin);
        } else {
          next = std::min(next, p);
        }
        for (OpId c : tensor.consumers) {
          const Step s = position[U(c)];
          if (s < sp) prev = std::max(prev, s);
          if (s > sp) next = std::min(next, s);
        }
      }
      if (!ok || next == std::numeric_limits<Step>::max()) continue;
      // The copies' inputs must be alive when the copies run. An input whose storage is not
      // live at the peak would now have to cross it: recompute its producer too (a chain, up
      // to greedy_max_chain ops), or, where that is not possible, count its bytes against
      // what the candidate frees.
      std::vector<Step> steps;
      for (auto [p, origin] : producers) steps.push_back(p);
      std::sort(steps.begin(), steps.end());
      steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
      std::vector<StorageId> extended;
      for (size_t i = 0; i < steps.size() && ok; ++i) {
        for (TensorId in : g.ops[U(order[U(steps[i])])].inputs) {
          const StorageId q = m.storage_of[U(in)];
          if (q == sid || !m.storages[U(q)].planned() || e.lifetimes[U(q)].end >= sp) continue;
          const OpId producer = g.tensors[U(in)].producer;
          const Step ps = position[U(producer)];
          if (std::find(steps.begin(), steps.end(), ps) != steps.end()) continue;
          if (static_cast<int>(steps.size()) < params.greedy_max_chain &&
              IsRecomputable(graph, e.rewritten.origin[U(producer)], params.rule))
            steps.push_back(ps);
          else
            extended.push_back(q);
        }
      }
      std::sort(steps.begin(), steps.end());
      double cost = 0;
      for (Step p : steps) cost += OpCost(graph, e.rewritten.origin[U(order[U(p)])]);
      std::sort(extended.begin(), extended.end());
      extended.erase(std::unique(extended.begin(), extended.end()), extended.end());
      Bytes penalty = 0;
      for (StorageId q : extended) penalty += m.storages[U(q)].size;
      const Bytes net = st.size - penalty;
      if (net <= 0) continue;
      Candidate c;
      c.score = static_cast<double>(net) * static_cast<double>(next - prev) / std::max(cost, 1e-9);
      c.at = next;
      for (Step p : steps) c.ops.push_back(e.rewritten.origin[U(order[U(p)])]);
      candidates.push_back(std::move(c));
    }
    std::sort(candidates.begin(), candidates.end(),
              [](const Candidate& a, const Candidate& b) { return a.score > b.score; });
    bool applied = false;
    for (const Candidate& c : candidates) {
      Schedule next = schedule;
      next.insert(next.begin() + c.at, c.ops.begin(), c.ops.end());
      if (!CheckSchedule(graph, next, params.rule).empty()) continue;
      schedule = std::move(next);
      applied = true;
      break;
    }
    if (!applied) return best;
  }
}

}  // namespace roam::remat::detail
