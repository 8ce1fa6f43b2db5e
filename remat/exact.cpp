// The exact method: MOCCASIN's retention intervals on a fixed base order (its section 2.3),
// as a MILP for GLPK (docs/remat.md, "ilp").
//
// Stages follow the base order: stage t ends with the original computation of the op at
// position t and may first recompute ops of earlier positions, in position order (MOCCASIN's
// events). An op's output is held over a union of at most C intervals, each opened by a
// computation; R[t][k] opens one in stage t, S[t][k] says the value is held into stage t.
// GLPK has no cumulative constraint, so the memory of each event is a row over the held
// values, chained through the stage (U), with FREE[t][i][k] releasing value i after event k
// when no later event of the stage reads it and it is not held into stage t + 1 (Checkmate's
// linearisation, restricted to the events MOCCASIN's order admits).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "core/deadline.h"
#include "core/types.h"
#include "ilp/glpk.h"
#include "remat/internal.h"
#include "remat/values.h"

namespace roam::remat::detail {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();

// The MILP's columns, by (stage, position).
struct Columns {
  std::vector<std::map<int, int>> S, R;  // per position: stage -> column
  struct Free {
    int stage, value, event, column;
  };
  std::vector<Free> frees;
  std::vector<std::pair<std::pair<int, int>, int>> u;  // (stage, event) -> column
  static int Get(const std::map<int, int>& m, int t) {
    auto it = m.find(t);
    return it == m.end() ? -1 : it->second;
  }
};

struct Built {
  ilp::Problem problem;
  Columns cols;
};

// relax: every column continuous, the LP relaxation. fix: R columns of stages outside
// [free_from, free_to] fixed to its values (a neighbourhood of it). Columns are numbered the
// same whatever the options, so solutions carry over.
Built BuildProblem(const Values& v, double budget, int max_computations, bool relax = false,
                   const std::vector<double>* fix = nullptr, int free_from = 0, int free_to = 0) {
  const ilp::ColumnKind binary = relax ? ilp::ColumnKind::kContinuous : ilp::ColumnKind::kBinary;
  Built b;
  ilp::Problem& P = b.problem;
  Columns& c = b.cols;
  c.S.resize(U(v.n));
  c.R.resize(U(v.n));
  for (int k = 0; k < v.n; ++k) {
    for (int t = k + 1; t <= v.horizon[U(k)]; ++t) {
      const double lo = v.output[U(k)] ? 1.0 : 0.0;
      c.S[U(k)][t] = P.AddColumn(binary, lo, 1.0);
    }
    if (max_computations <= 1) continue;
    for (int t = k + 1; t <= v.last_recompute[U(k)]; ++t) {
      const bool fixed = fix && (t < free_from || t > free_to);
      const double x = fixed ? (*fix)[U(P.num_columns())] : 0.0;
      c.R[U(k)][t] = P.AddColumn(binary, x, fixed ? x : 1.0, v.cost[U(k)]);
    }
  }
  using Terms = std::vector<std::pair<int, double>>;
  for (int k = 0; k < v.n; ++k) {
    // At most C computations.
    if (!c.R[U(k)].empty()) {
      Terms row;
      for (auto [t, col] : c.R[U(k)]) row.emplace_back(col, 1.0);
      P.AddRow(row, -kInf, max_computations - 1.0);
    }
    // A value is held into stage t + 1 only if held into t or computed in t.
    for (auto [t, col] : c.S[U(k)]) {
      if (t == k + 1) continue;
      Terms row = {{col, 1.0}, {c.S[U(k)].at(t - 1), -1.0}};
      if (int r = Columns::Get(c.R[U(k)], t - 1); r >= 0) row.emplace_back(r, -1.0);
      P.AddRow(row, -kInf, 0.0);
    }
  }
  // Per stage: events in position order, each reading available values, and the memory chain.
  for (int t = 0; t < v.n; ++t) {
    std::vector<int> events;
    for (int k = 0; k < t; ++k)
      if (Columns::Get(c.R[U(k)], t) >= 0) events.push_back(k);
    events.push_back(t);
    auto computed = [&](int k) { return k == t ? -2 : Columns::Get(c.R[U(k)], t); };
    // Availability: R[t][k] <= R[t][i] + S[t][i] (1 <= ... for the original computation).
    for (int k : events)
      for (int i : v.deps[U(k)]) {
        Terms row;
        const int rk = computed(k);
        if (rk >= 0) row.emplace_back(rk, 1.0);
        if (int ri = Columns::Get(c.R[U(i)], t); ri >= 0) row.emplace_back(ri, -1.0);
        if (int si = Columns::Get(c.S[U(i)], t); si >= 0) row.emplace_back(si, -1.0);
        P.AddRow(row, -kInf, rk >= 0 ? 0.0 : -1.0);
      }
    // Memory: held values at the stage's start, then per event its output, then its frees.
    Terms held;
    for (int i = 0; i < t; ++i)
      if (int si = Columns::Get(c.S[U(i)], t); si >= 0 && v.keep[U(i)] > 0)
        held.emplace_back(si, v.keep[U(i)]);
    Terms before = held;  // memory before the current event, as terms
    double before_constant = 0;
    for (size_t e = 0; e < events.size(); ++e) {
      const int k = events[e];
      const int rk = computed(k);
      Terms peak = before;
      double constant = before_constant;
      if (rk >= 0)
        peak.emplace_back(rk, v.all[U(k)]);
      else
        constant += v.all[U(k)];
      P.AddRow(peak, -kInf, budget - constant);
      if (e + 1 == events.size()) break;  // the stage ends with its original computation
      // Frees after event k: its inputs and its own output, unless a later event of the stage
      // reads them or they are held into the next stage.
      std::vector<int> candidates = v.deps[U(k)];
      candidates.push_back(k);
      Terms after = before;
      double after_constant = before_constant;
      after.emplace_back(rk, v.keep[U(k)]);
      for (int i : candidates) {
        if (v.output[U(i)] || v.keep[U(i)] <= 0) continue;
        bool read_by_original = false;
        std::vector<int> later;
        for (int j : v.users[U(i)])
          if (j > k && j <= t) {
            if (j == t)
              read_by_original = true;
            else if (int rj = Columns::Get(c.R[U(j)], t); rj >= 0)
              later.push_back(rj);
          }
        if (read_by_original) continue;
        const int f = P.AddColumn(binary, 0.0, 1.0);
        c.frees.push_back({t, i, k, f});
        P.AddRow(Terms{{f, 1.0}, {rk, -1.0}}, -kInf, 0.0);
        if (int s = Columns::Get(c.S[U(i)], t + 1); s >= 0)
          P.AddRow(Terms{{f, 1.0}, {s, 1.0}}, -kInf, 1.0);
        for (int rj : later) P.AddRow(Terms{{f, 1.0}, {rj, 1.0}}, -kInf, 1.0);
        after.emplace_back(f, -v.keep[U(i)]);
      }
      // U after the event, as a column, so that rows stay short.
      const int u =
          P.AddColumn(ilp::ColumnKind::kContinuous, 0.0, kInf);  // frees only what is held
      c.u.push_back({{t, k}, u});
      Terms def = after;
      def.emplace_back(u, -1.0);
      P.AddRow(def, -after_constant, -after_constant);
      before = {{u, 1.0}};
      before_constant = 0;
    }
  }
  return b;
}

// The schedule of a solution: per stage, the recomputations in position order, then the op.
Schedule Decode(const Values& v, const Columns& c, std::span<const double> x) {
  Schedule s;
  for (int t = 0; t < v.n; ++t) {
    for (int k = 0; k < t; ++k)
      if (int r = Columns::Get(c.R[U(k)], t); r >= 0 && x[U(r)] > 0.5) s.push_back(v.op[U(k)]);
    s.push_back(v.op[U(t)]);
  }
  return s;
}

// A schedule as a solution of the MILP, when it has the MILP's shape (originals in the base
// order, recomputations where columns allow them, at most C computations); the stage's
// recomputations are taken in position order.
std::optional<std::vector<double>> Encode(const Values& v, const Columns& c, const ilp::Problem& P,
                                          const Graph& graph, const Schedule& schedule) {
  std::vector<double> x(U(P.num_columns()), 0.0);
  std::vector<int> pos(U(graph.num_ops()), -1);
  for (int p = 0; p < v.n; ++p) pos[U(v.op[U(p)])] = p;
  std::vector<char> seen(U(v.n), 0);
  int next = 0;
  for (OpId op : schedule) {
    const int p = pos[U(op)];
    if (!seen[U(p)]) {
      if (p != next) return std::nullopt;
      seen[U(p)] = 1;
      ++next;
      continue;
    }
    const int r = Columns::Get(c.R[U(p)], next);
    if (next >= v.n || r < 0 || x[U(r)] > 0.5) return std::nullopt;
    x[U(r)] = 1.0;
  }
  auto computed = [&](int k, int t) {
    if (k == t) return true;
    const int r = Columns::Get(c.R[U(k)], t);
    return r >= 0 && x[U(r)] > 0.5;
  };
  // Held values: needed from stage t when read in t before being recomputed there, or needed
  // from t + 1 and not recomputed in t.
  for (int i = 0; i < v.n; ++i) {
    bool need_next = v.output[U(i)];
    for (int t = v.n - 1; t > i; --t) {
      bool read = false;
      for (int j : v.users[U(i)]) read = read || computed(j, t);
      const bool need = !computed(i, t) && (read || need_next);
      if (need) {
        const int s = Columns::Get(c.S[U(i)], t);
        if (s < 0) return std::nullopt;
        x[U(s)] = 1.0;
      }
      need_next = need;
    }
  }
  for (const auto& f : c.frees) {
    bool ok = computed(f.event, f.stage);
    if (int s = Columns::Get(c.S[U(f.value)], f.stage + 1); s >= 0 && x[U(s)] > 0.5) ok = false;
    for (int j : v.users[U(f.value)])
      if (j > f.event && j <= f.stage && computed(j, f.stage)) ok = false;
    x[U(f.column)] = ok ? 1.0 : 0.0;
  }
  // The memory chain: U after event k = held + keep[k] * R - frees.
  std::map<std::pair<int, int>, double> u_value;
  std::map<std::pair<int, int>, double> freed;
  for (const auto& f : c.frees)
    if (x[U(f.column)] > 0.5) freed[{f.stage, f.event}] += v.keep[U(f.value)];
  int current_stage = -1;
  double mem = 0;
  for (const auto& [key, col] : c.u) {
    const auto [t, k] = key;
    if (t != current_stage) {
      current_stage = t;
      mem = 0;
      for (int i = 0; i < t; ++i)
        if (int s = Columns::Get(c.S[U(i)], t); s >= 0 && x[U(s)] > 0.5) mem += v.keep[U(i)];
    }
    mem += (computed(k, t) ? v.keep[U(k)] : 0.0) - freed[key];
    x[U(col)] = mem;
  }
  return x;
}

// GLPK's branch-and-cut finds no integer point of this model in minutes on 100-op graphs, and
// the greedy's schedule rarely has its shape, so the MILP gets a start rounded from its LP
// relaxation: recompute (t, k) where the LP's R is at least theta (the C - 1 largest per op),
// for a few theta; the cheapest schedule within budget by roam's own memory model.
std::optional<MethodResult> RoundRelaxation(const Graph& graph, const Values& v, Bytes budget,
                                            const RematParams& params, double time_limit_s) {
  Built lp = BuildProblem(v, static_cast<double>(budget), params.ilp.max_computations, true);
  ilp::SolveParams sp;
  sp.time_limit_s = time_limit_s;
  sp.max_lp_iterations = params.ilp.max_lp_iterations;
  ilp::SolveResult s = lp.problem.Solve(sp);
  if (!s.has_solution) return std::nullopt;
  std::optional<MethodResult> best;
  for (double theta : {0.5, 0.3, 0.15, 0.05, 1e-3}) {
    std::vector<std::vector<char>> chosen(U(v.n));  // per stage: positions recomputed
    for (auto& stage : chosen) stage.assign(U(v.n), 0);
    for (int k = 0; k < v.n; ++k) {
      std::vector<std::pair<double, int>> picks;
      for (auto [t, col] : lp.cols.R[U(k)])
        if (s.values[U(col)] >= theta) picks.emplace_back(s.values[U(col)], t);
      std::sort(picks.rbegin(), picks.rend());
      picks.resize(std::min(picks.size(), U(std::max(0, params.ilp.max_computations - 1))));
      for (auto [value, t] : picks) chosen[U(t)][U(k)] = 1;
    }
    Schedule schedule;
    for (int t = 0; t < v.n; ++t) {
      for (int k = 0; k < t; ++k)
        if (chosen[U(t)][U(k)]) schedule.push_back(v.op[U(k)]);
      schedule.push_back(v.op[U(t)]);
    }
    if (!CheckSchedule(graph, schedule, params.rule).empty()) continue;
    Evaluated e = Evaluate(graph, schedule, params);
    if (e.peak > budget || (best && best->recompute_cost <= e.recompute_cost)) continue;
    MethodResult r;
    r.method = "ilp";
    r.status = Status::kFeasible;
    r.schedule = std::move(schedule);
    r.peak = e.peak;
    r.recompute_cost = e.recompute_cost;
    best = std::move(r);
  }
  return best;
}

}  // namespace

MethodResult Exact(const Graph& graph, const Schedule& start, Bytes budget,
                   const RematParams& params, const MethodResult& warm, double time_limit_s,
                   double cost_bound) {
  const auto started = std::chrono::steady_clock::now();
  MethodResult result = warm;
  // A plan that meets the compute lower bound is optimal: nothing is left to search for.
  auto proven = [&] { return MeetsCostBound(result, budget, cost_bound); };
  if (proven()) return result;
  const Values v = BuildValues(graph, start, params);
  if (time_limit_s > 0)
    if (auto rounded = RoundRelaxation(graph, v, budget, params, time_limit_s / 4);
        rounded && (result.peak > budget || rounded->recompute_cost < result.recompute_cost))
      result = std::move(*rounded);
  Built b = BuildProblem(v, static_cast<double>(budget), params.ilp.max_computations);
  std::optional<std::vector<double>> incumbent;
  if (result.peak <= budget && !result.schedule.empty()) {
    incumbent = Encode(v, b.cols, b.problem, graph, result.schedule);
    if (incumbent && !b.problem.CheckFeasible(*incumbent).empty()) incumbent.reset();
  }
  // Large neighbourhood search: GLPK improves an incumbent of the whole MILP slowly, but
  // solves it fast with the recomputations of all stages but a window fixed. Windows of
  // ilp.window_stages stages, overlapping by half, sweep the base order until a sweep gains
  // nothing, after ilp.window_sweeps sweeps, or (an outer cap) when half the time is spent.
  const int window = std::max(2, params.ilp.window_stages);
  int sweeps = 0;
  for (bool gained = incumbent.has_value(); gained && sweeps < params.ilp.window_sweeps &&
                                            SecondsSince(started) < time_limit_s / 2 && !proven();
       ++sweeps) {
    gained = false;
    for (int from = 0; from < v.n && SecondsSince(started) < time_limit_s / 2 && !proven();
         from += window / 2) {
      Built sub = BuildProblem(v, static_cast<double>(budget), params.ilp.max_computations, false,
                               &*incumbent, from, from + window - 1);
      ilp::SolveParams lp;
      lp.time_limit_s =
          std::min(time_limit_s / 2 - SecondsSince(started), params.ilp.window_time_limit_s);
      lp.max_nodes = params.ilp.window_max_nodes;
      lp.max_lp_iterations = params.ilp.max_lp_iterations;
      ilp::SolveResult w = sub.problem.Solve(lp, std::span<const double>(*incumbent));
      if (!w.has_solution || w.from_incumbent || w.call != ilp::CallOutcome::kOk) continue;
      Schedule schedule = Decode(v, b.cols, w.values);
      if (!CheckSchedule(graph, schedule, params.rule).empty()) continue;
      Evaluated e = Evaluate(graph, schedule, params);
      if (e.peak > budget || e.recompute_cost >= result.recompute_cost - 1e-9) continue;
      if (!b.problem.CheckFeasible(w.values).empty()) continue;
      incumbent = std::move(w.values);
      result.method = "ilp";
      result.status = Status::kFeasible;
      result.schedule = std::move(schedule);
      result.peak = e.peak;
      result.recompute_cost = e.recompute_cost;
      gained = true;
    }
  }
  const MethodResult start_result = result;
  if (proven()) {
    result.status = Status::kOptimal;
    return result;
  }
  ilp::SolveParams sp;
  sp.max_nodes = params.ilp.max_nodes;
  sp.max_lp_iterations = params.ilp.max_lp_iterations;
  if (std::isfinite(cost_bound)) sp.stop_at_objective = cost_bound;
  sp.time_limit_s = std::max(0.0, time_limit_s - SecondsSince(started));
  ilp::SolveResult s =
      incumbent ? b.problem.Solve(sp, std::span<const double>(*incumbent)) : b.problem.Solve(sp);
  result.solver = std::string(ilp::ToString(s.call));
  if (s.call != ilp::CallOutcome::kOk) result.solver += ": " + s.message;
  const double bound = std::isfinite(s.best_bound) ? std::max(0.0, s.best_bound) : 0.0;
  switch (s.status) {
    // Optimal over the MILP's schedules: those that keep the base order, with at most C
    // computations per op. Another order can do better (perf/RESULTS.md), so only the compute
    // lower bound proves a plan optimal (remat.cpp).
    case ilp::ModelStatus::kOptimal:
      result.status = Status::kOptimalInOrder;
      break;
    case ilp::ModelStatus::kFeasibleTimeLimit:
      result.status = Status::kTimeLimit;
      break;
    // Infeasible over the MILP's schedules only: another order, or more computations, may fit.
    case ilp::ModelStatus::kInfeasible:
      result.status = Status::kInfeasible;
      break;
    case ilp::ModelStatus::kNoSolutionTimeLimit:
      result.status = Status::kTimeLimit;
      break;
    case ilp::ModelStatus::kError:
      result.status = Status::kError;
      break;
  }
  // The bound is over the MILP's schedules; it bounds the problem only where the MILP models
  // every recomputation roam allows (no aliasing, one output per op), and then only for
  // schedules with the base order and at most C computations: RematResult::order_lower_bound.
  if (v.exact && s.status != ilp::ModelStatus::kError && s.status != ilp::ModelStatus::kInfeasible)
    result.lower_bound = bound;
  if (s.has_solution && !s.from_incumbent) {
    Schedule schedule = Decode(v, b.cols, s.values);
    if (CheckSchedule(graph, schedule, params.rule).empty()) {
      Evaluated e = Evaluate(graph, schedule, params);
      // The MILP's memory is exact or above roam's (docs/remat.md), so this holds unless
      // GLPK's tolerances let a row slip; then the warm start stands.
      if (e.peak <= budget &&
          (start_result.peak > budget || e.recompute_cost <= start_result.recompute_cost)) {
        result.method = "ilp";
        result.schedule = std::move(schedule);
        result.peak = e.peak;
        result.recompute_cost = e.recompute_cost;
      }
    }
  }
  if (result.peak > budget && s.status == ilp::ModelStatus::kOptimal)
    result.status = Status::kError;
  if (s.status == ilp::ModelStatus::kInfeasible && result.peak <= budget)
    result.status = start_result.status;
  // A schedule outside the MILP's space (the greedy's) beat its bound: no bound is known.
  if (result.peak <= budget && result.lower_bound > result.recompute_cost + 1e-9)
    result.lower_bound = 0;
  return result;
}

}  // namespace roam::remat::detail
