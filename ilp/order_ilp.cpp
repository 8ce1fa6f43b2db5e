#include "ilp/order_ilp.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>

#include "core/types.h"
#include "ilp/order_reduce.h"

namespace roam::ilp {
namespace {

using detail::BuildContext;
using detail::Context;
using detail::Contract;
using detail::FindSymmetryClasses;
using detail::Kind;
using detail::PeakAtSteps;
using detail::Positions;
using detail::Reduced;
using detail::Sort;
using detail::SubStorage;
using detail::U;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A linear expression constant + coef * column (column -1: constant only).
struct Lin {
  double constant = 0.0;
  int col = -1;
  double coef = 0.0;
  bool IsConst() const { return col < 0; }
};

}  // namespace

Bytes MultiStreamPeak(const Graph& graph, const MemoryModel& model, const Subgraph& sub,
                      std::span<const OpId> ops, std::span<const Step> steps, int num_steps) {
  const Context c = BuildContext(graph, model, BuildDependencies(graph), sub);
  std::vector<int> step(U(c.n), -1);
  for (size_t k = 0; k < ops.size(); ++k) {
    const int i = c.local_of[U(ops[k])];
    if (i < 0 || steps[k] < 0 || steps[k] >= num_steps)
      throw std::invalid_argument("MultiStreamPeak: op outside the subgraph or step out of range");
    step[U(i)] = steps[k];
  }
  for (int i = 0; i < c.n; ++i) {
    if (step[U(i)] < 0) throw std::invalid_argument("MultiStreamPeak: op without a step");
    for (int p : c.preds[U(i)])
      if (step[U(p)] >= step[U(i)])
        throw std::invalid_argument("MultiStreamPeak: op does not follow its predecessor");
  }
  return PeakAtSteps(c, step, num_steps);
}

OrderIlpResult SolveOrderIlp(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
                             const Subgraph& sub, std::span<const OpId> warm_start,
                             const OrderIlpParams& params) {
  const auto started = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  const Context c = BuildContext(graph, model, deps, sub);
  OrderIlpResult result;
  const bool multi = params.multi_stream;

  // Warm start: positions of the local ops.
  std::vector<OpId> warm(warm_start.begin(), warm_start.end());
  if (warm.empty()) {
    for (OpId op : graph.program_order)
      if (c.local_of[U(op)] >= 0) warm.push_back(op);
  }
  const std::vector<int> warm_pos = Positions(c, warm);
  result.warm_start_peak = PeakAtSteps(c, warm_pos, c.n);

  Reduced r = Contract(c, params.contract && !multi);
  if (params.symmetry_breaking && !multi) FindSymmetryClasses(c, r);
  result.contracted = r.contracted;
  std::vector<int> alive;  // node ids
  for (int v = 0; v < c.n; ++v)
    if (r.nodes[U(v)].alive) alive.push_back(v);
  const int num_nodes = static_cast<int>(alive.size());
  result.nodes = num_nodes;
  const int num_steps =
      multi ? (params.multi_stream_steps > 0 ? params.multi_stream_steps : c.n) : num_nodes;

  // Topological order of the nodes (Kahn), smallest warm position of the head first.
  std::vector<int> topo;
  {
    std::vector<int> missing(U(c.n), 0);
    using Item = std::pair<int, int>;  // (warm position, node)
    std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
    for (int v : alive) {
      missing[U(v)] = static_cast<int>(r.nodes[U(v)].preds.size());
      if (missing[U(v)] == 0) ready.push({warm_pos[U(v)], v});
    }
    while (!ready.empty()) {
      const int v = ready.top().second;
      ready.pop();
      topo.push_back(v);
      for (int s : r.nodes[U(v)].succs)
        if (--missing[U(s)] == 0) ready.push({warm_pos[U(s)], s});
    }
    if (static_cast<int>(topo.size()) != num_nodes)
      throw std::logic_error("order ILP: the contracted graph has a cycle");
  }

  // The incumbent, single stream: the Kahn order, then every symmetry class's positions
  // handed to its members in chain order; the chain edges join the dependencies after that
  // (the canonical incumbent respects them).
  std::vector<int> inc_step(U(c.n), -1);
  if (!multi) {
    for (int k = 0; k < num_nodes; ++k) inc_step[U(topo[U(k)])] = k;
    for (const auto& members : r.classes) {
      std::vector<int> slots;
      for (int v : members) slots.push_back(inc_step[U(v)]);
      std::sort(slots.begin(), slots.end());
      for (size_t k = 0; k < members.size(); ++k) inc_step[U(members[k])] = slots[k];
      for (size_t k = 0; k + 1 < members.size(); ++k) {
        r.nodes[U(members[k])].succs.push_back(members[k + 1]);
        r.nodes[U(members[k + 1])].preds.push_back(members[k]);
        Sort(r.nodes[U(members[k])].succs);
        Sort(r.nodes[U(members[k + 1])].preds);
        ++result.symmetric;
      }
    }
    std::sort(topo.begin(), topo.end(),
              [&](int a, int b) { return inc_step[U(a)] < inc_step[U(b)]; });
  }

  // ASAP/ALAP spans. Single stream: an op can run no earlier than after all its ancestors
  // and no later than before all its descendants. Multi-stream: longest paths.
  std::vector<int> asap(U(c.n), 0), alap(U(c.n), num_steps - 1);
  if (multi) {
    for (int v : topo)
      for (int p : r.nodes[U(v)].preds) asap[U(v)] = std::max(asap[U(v)], asap[U(p)] + 1);
    for (auto it = topo.rbegin(); it != topo.rend(); ++it)
      for (int s : r.nodes[U(*it)].succs) alap[U(*it)] = std::min(alap[U(*it)], alap[U(s)] - 1);
    for (int v : topo)
      if (asap[U(v)] > alap[U(v)])
        throw std::invalid_argument("order ILP: " + std::to_string(num_steps) +
                                    " steps are fewer than the longest dependency chain");
  } else {
    const size_t words = (U(c.n) + 63) / 64;
    std::vector<std::uint64_t> anc(U(c.n) * words, 0), desc(U(c.n) * words, 0);
    auto bits = [&](std::vector<std::uint64_t>& m, int v) { return m.data() + U(v) * words; };
    for (int v : topo)
      for (int p : r.nodes[U(v)].preds) {
        std::uint64_t* a = bits(anc, v);
        const std::uint64_t* b = bits(anc, p);
        for (size_t w = 0; w < words; ++w) a[w] |= b[w];
        a[U(p) / 64] |= std::uint64_t{1} << (U(p) % 64);
      }
    for (auto it = topo.rbegin(); it != topo.rend(); ++it)
      for (int s : r.nodes[U(*it)].succs) {
        std::uint64_t* a = bits(desc, *it);
        const std::uint64_t* b = bits(desc, s);
        for (size_t w = 0; w < words; ++w) a[w] |= b[w];
        a[U(s) / 64] |= std::uint64_t{1} << (U(s) % 64);
      }
    for (int v : alive) {
      int na = 0, nd = 0;
      for (size_t w = 0; w < words; ++w) {
        na += std::popcount(bits(anc, v)[w]);
        nd += std::popcount(bits(desc, v)[w]);
      }
      asap[U(v)] = na;
      alap[U(v)] = num_nodes - 1 - nd;
    }
  }

  // The incumbent, multi-stream: the warm order packed into steps, or ASAP when that does
  // not fit.
  if (multi) {
    bool fits = true;
    int last = 0;
    std::vector<int> load(U(num_steps) + U(c.n) + 1, 0);
    for (OpId op : warm) {
      const int v = c.local_of[U(op)];
      int s = num_steps >= c.n ? warm_pos[U(v)] : last;
      for (int p : r.nodes[U(v)].preds) s = std::max(s, inc_step[U(p)] + 1);
      while (params.max_concurrency > 0 && load[U(s)] >= params.max_concurrency) ++s;
      if (s > alap[U(v)]) fits = false;
      ++load[U(s)];
      inc_step[U(v)] = last = s;
    }
    if (!fits)
      for (int v : alive) inc_step[U(v)] = asap[U(v)];
  }

  // Expands node steps into an order of the subgraph's ops (and steps per op).
  auto expand = [&](const std::vector<int>& node_step, std::vector<Step>* op_steps) {
    std::vector<int> by_step = alive;
    std::sort(by_step.begin(), by_step.end(), [&](int a, int b) {
      return std::make_pair(node_step[U(a)], warm_pos[U(a)]) <
             std::make_pair(node_step[U(b)], warm_pos[U(b)]);
    });
    std::vector<OpId> order;
    if (op_steps) op_steps->clear();
    for (int v : by_step)
      for (int i : r.nodes[U(v)].ops) {
        order.push_back(c.ops[U(i)]);
        if (op_steps) op_steps->push_back(node_step[U(v)]);
      }
    return order;
  };
  // Peak of the reduced model for node steps (the ILP's objective at an integer point).
  auto reduced_peak = [&](const std::vector<int>& node_step) {
    std::vector<int> step(U(c.n));
    for (int v : alive)
      for (int i : r.nodes[U(v)].ops) step[U(i)] = node_step[U(v)];
    return PeakAtSteps(c, step, num_steps);
  };

  std::vector<Step> inc_op_steps;
  std::vector<OpId> inc_order = expand(inc_step, &inc_op_steps);
  const Bytes inc_peak = reduced_peak(inc_step);
  if (!multi) {
    // The reductions are exact: the contracted, canonicalised warm start is a valid order
    // with the reduced model's peak, and no worse than the warm start.
    const Bytes check = PeakAtSteps(c, Positions(c, inc_order), c.n);
    if (check != inc_peak || inc_peak > result.warm_start_peak)
      throw std::logic_error("order ILP: contraction changed the peak (" +
                             std::to_string(result.warm_start_peak) + " -> " +
                             std::to_string(inc_peak) + " / " + std::to_string(check) + ")");
  }

  auto finish = [&](std::vector<OpId> order, std::vector<Step> op_steps, Bytes objective,
                    Bytes bound) {
    result.order = std::move(order);
    if (multi) result.steps = std::move(op_steps);
    result.peak = PeakAtSteps(c, Positions(c, result.order), c.n);
    result.objective = objective;
    result.lower_bound = std::min(bound, multi ? objective : result.peak);
    if (result.lower_bound >= (multi ? objective : result.peak)) {
      result.status = ModelStatus::kOptimal;
      result.call = CallOutcome::kOk;
    }
    const Bytes top = multi ? objective : result.peak;
    result.gap =
        top == 0 ? 0.0 : static_cast<double>(top - result.lower_bound) / static_cast<double>(top);
    result.seconds = elapsed();
    return result;
  };

  // Sizes in units of their GCD; live_through is a constant added back at the end.
  std::int64_t unit = 0;
  for (const SubStorage& x : c.storages) unit = std::gcd(unit, x.size);
  if (unit == 0) unit = 1;
  // Lower bound: every block needs all it touches at its step; forced residency below.
  Bytes lower = 0;
  for (int v : alive) {
    Bytes sum = 0;
    for (int k : r.nodes[U(v)].touches) sum += c.storages[U(k)].size;
    lower = std::max(lower, sum);
  }
  for (const SubStorage& x : c.storages)
    if (x.kind == Kind::kIn && x.to_end) lower = std::max(lower, x.size);  // crude but valid
  lower += c.through_bytes;
  if (num_nodes <= 1 || lower >= inc_peak) {
    result.status = ModelStatus::kOptimal;
    result.from_warm_start = true;
    result.note = num_nodes <= 1 ? "nothing to order" : "warm start meets the lower bound";
    return finish(std::move(inc_order), std::move(inc_op_steps), inc_peak,
                  std::max(lower, inc_peak));
  }
  const std::int64_t ub_units = (inc_peak - c.through_bytes) / unit;
  const std::int64_t lb_units = (lower - c.through_bytes + unit - 1) / unit;

  // Size estimate before building anything.
  {
    std::int64_t estimate = 0;
    for (int v : alive) {
      const std::int64_t span = alap[U(v)] - asap[U(v)];
      estimate += span * (3 + 2 * static_cast<std::int64_t>(r.nodes[U(v)].preds.size()));
    }
    for (size_t k = 0; k < c.storages.size(); ++k) {
      const SubStorage& x = c.storages[k];
      const std::int64_t users = static_cast<std::int64_t>(r.storage_nodes[k].size());
      estimate += std::int64_t{num_steps} * (1 + 3 * users) / (x.to_end ? 2 : 1);
    }
    if (estimate > params.max_nonzeros) {
      result.status = ModelStatus::kFeasibleTimeLimit;
      result.from_warm_start = true;
      result.note = "model too large (about " + std::to_string(estimate) + " nonzeros, limit " +
                    std::to_string(params.max_nonzeros) + "): warm start kept";
      return finish(std::move(inc_order), std::move(inc_op_steps), inc_peak, lower);
    }
  }

  Problem lp;
  std::vector<double> values;  // incumbent, grown with the columns
  auto add_col = [&](ColumnKind kind, double lo, double hi, double obj, double value) {
    values.push_back(value);
    return lp.AddColumn(kind, lo, hi, obj);
  };
  // R(v, s): node v has run at step s or before.
  std::vector<int> first_col(U(c.n), -1);
  for (int v : alive) {
    for (int s = asap[U(v)]; s < alap[U(v)]; ++s) {
      const int col = add_col(ColumnKind::kBinary, 0, 1, 0, inc_step[U(v)] <= s ? 1.0 : 0.0);
      if (s == asap[U(v)]) first_col[U(v)] = col;
    }
  }
  auto R = [&](int v, int s) -> Lin {
    if (s < asap[U(v)]) return {0.0, -1, 0.0};
    if (s >= alap[U(v)]) return {1.0, -1, 0.0};
    return {0.0, first_col[U(v)] + (s - asap[U(v)]), 1.0};
  };
  auto value_of = [&](const Lin& x) {
    return x.constant + (x.IsConst() ? 0.0 : x.coef * values[U(x.col)]);
  };
  std::vector<std::pair<int, double>> terms;
  // Monotone in s.
  for (int v : alive)
    for (int s = asap[U(v)]; s + 1 < alap[U(v)]; ++s) {
      terms = {{R(v, s).col, 1.0}, {R(v, s + 1).col, -1.0}};
      lp.AddRow(terms, -kInf, 0.0);
    }
  // Precedence: v has run by s only if each predecessor has run by s - 1.
  for (int v : alive)
    for (int u : r.nodes[U(v)].preds)
      for (int s = asap[U(v)]; s < alap[U(v)]; ++s) {
        const Lin before = R(u, s - 1);
        if (before.IsConst()) {
          if (before.constant == 1.0) continue;
          throw std::logic_error("order ILP: spans contradict a dependency");
        }
        terms = {{R(v, s).col, 1.0}, {before.col, -1.0}};
        lp.AddRow(terms, -kInf, 0.0);
      }
  // Multi-stream with a concurrency limit: at most K nodes run at step s (those that have run
  // by s but not by s - 1).
  if (multi && params.max_concurrency > 0)
    for (int s = 0; s < num_steps; ++s) {
      terms.clear();
      double constant = 0.0;
      for (int v : alive) {
        if (s < asap[U(v)] || s > alap[U(v)]) continue;
        for (const auto& [x, sign] : {std::pair(R(v, s), 1.0), std::pair(R(v, s - 1), -1.0)}) {
          if (x.IsConst())
            constant += sign * x.constant;
          else
            terms.emplace_back(x.col, sign);
        }
      }
      if (!terms.empty()) lp.AddRow(terms, -kInf, params.max_concurrency - constant);
    }
  // Single stream: exactly s + 1 blocks have run by step s.
  if (!multi)
    for (int s = 0; s < num_steps; ++s) {
      terms.clear();
      double constant = 0.0;
      for (int v : alive) {
        const Lin x = R(v, s);
        if (x.IsConst())
          constant += x.constant;
        else
          terms.emplace_back(x.col, 1.0);
      }
      if (!terms.empty()) lp.AddRow(terms, s + 1 - constant, s + 1 - constant);
    }
  // Residency (MODeL's C + P): storage k is resident at s when its creator has run by s and
  // some user has not run before s. Outside the maximum useful lifetime it is 0; where the
  // spans force it, it is the constant 1 (forced preservation).
  std::vector<std::vector<std::pair<int, double>>> peak_terms(U(num_steps));
  std::vector<double> peak_const(U(num_steps), 0.0);
  for (size_t k = 0; k < c.storages.size(); ++k) {
    // The build is part of the time limit: give up on the model, keeping the warm start, once
    // it has used the whole limit (the residency rows are most of the build).
    if (elapsed() > params.solve.time_limit_s) {
      result.status = ModelStatus::kFeasibleTimeLimit;
      result.from_warm_start = true;
      result.note = "time limit reached while building the model: warm start kept";
      return finish(std::move(inc_order), std::move(inc_op_steps), inc_peak, lower);
    }
    const SubStorage& x = c.storages[k];
    const double size = static_cast<double>(x.size / unit);
    const int creator = r.node_of_storage[k];
    std::vector<int> users;
    for (int u : r.storage_nodes[k])
      if (u != creator) users.push_back(u);
    if (users.empty() && creator >= 0) users.push_back(creator);
    const int lo = creator >= 0 ? asap[U(creator)] : 0;
    int hi = num_steps - 1;
    if (!x.to_end) {
      hi = 0;
      for (int u : users) hi = std::max(hi, alap[U(u)]);
    }
    for (int s = lo; s <= hi; ++s) {
      const Lin made = creator >= 0 ? R(creator, s) : Lin{1.0, -1, 0.0};
      Lin live{0.0, -1, 0.0};
      if (x.to_end || (made.IsConst() && made.constant == 0.0)) {
        live = made;
      } else {
        std::vector<Lin> pending;  // users not surely done before s
        bool some_user_ahead = false;
        for (int u : users) {
          const Lin done = R(u, s - 1);
          if (done.IsConst() && done.constant == 1.0) continue;
          if (done.IsConst()) some_user_ahead = true;
          pending.push_back(done);
        }
        if (pending.empty()) {
          live = {0.0, -1, 0.0};
        } else if (some_user_ahead) {
          live = made;  // a user surely runs at s or later: resident iff created
        } else if (pending.size() == 1 && made.IsConst()) {
          live = {1.0, pending[0].col, -1.0};  // resident iff that user has not run
        } else {
          double v = 0.0;
          for (const Lin& done : pending) v = std::max(v, value_of(made) - value_of(done));
          live = {0.0, add_col(ColumnKind::kContinuous, 0, 1, 0, v), 1.0};
          for (const Lin& done : pending) {
            // live - made + done >= 0
            terms = {{live.col, 1.0}};
            double rhs = 0.0;
            if (made.IsConst())
              rhs += made.constant;
            else
              terms.emplace_back(made.col, -1.0);
            terms.emplace_back(done.col, 1.0);
            lp.AddRow(terms, rhs, kInf);
          }
        }
      }
      peak_const[U(s)] += size * live.constant;
      if (!live.IsConst()) peak_terms[U(s)].emplace_back(live.col, size * live.coef);
    }
  }
  // Forced residency: the least each step's sum can be with every variable at its bound.
  double forced = 0.0;
  for (int s = 0; s < num_steps; ++s) {
    double least = peak_const[U(s)];
    for (const auto& [col, coef] : peak_terms[U(s)]) least += std::min(0.0, coef);
    forced = std::max(forced, least);
  }
  const double peak_lo = std::max(static_cast<double>(lb_units), forced);
  if (!multi && peak_lo >= static_cast<double>(ub_units)) {
    // The memory forced at some step already reaches the warm start's peak.
    result.status = ModelStatus::kOptimal;
    result.from_warm_start = true;
    result.note = "warm start meets the forced-residency bound";
    return finish(std::move(inc_order), std::move(inc_op_steps), inc_peak, inc_peak);
  }
  const int peak_col = add_col(ColumnKind::kInteger, peak_lo, static_cast<double>(ub_units), 1.0,
                               static_cast<double>(ub_units));
  for (int s = 0; s < num_steps; ++s) {
    if (peak_terms[U(s)].empty()) continue;
    terms = peak_terms[U(s)];
    for (auto& t : terms) t.second = -t.second;
    terms.emplace_back(peak_col, 1.0);
    lp.AddRow(terms, peak_const[U(s)], kInf);
  }
  result.model_built = true;
  result.columns = lp.num_columns();
  result.rows = lp.num_rows();
  result.nonzeros = lp.num_nonzeros();

  SolveParams solve = params.solve;
  solve.time_limit_s = std::max(0.0, solve.time_limit_s - elapsed());
  if (solve.stop_at_objective)
    *solve.stop_at_objective = (*solve.stop_at_objective - static_cast<double>(c.through_bytes)) /
                               static_cast<double>(unit);
  SolveResult solved = lp.Solve(solve, std::span<const double>(values));
  result.status = solved.status;
  result.call = solved.call;
  result.from_warm_start = solved.from_incumbent;
  result.note = solved.message;
  if (!solved.has_solution) throw std::logic_error("order ILP: no solution despite warm start");

  std::vector<int> node_step(U(c.n), -1);
  for (int v : alive) {
    int s = asap[U(v)];
    while (s < alap[U(v)] && solved.values[U(R(v, s).col)] < 0.5) ++s;
    node_step[U(v)] = s;
  }
  // A solution GLPK accepted within its tolerances may still not decode to what it claims:
  // then neither it nor GLPK's bound is trusted, and the warm start is the answer.
  std::string inexact;
  if (!multi) {
    std::vector<int> seen(U(num_steps), 0);
    for (int v : alive)
      if (seen[U(node_step[U(v)])]++) inexact = "two blocks decoded at one step";
  }
  const Bytes objective =
      static_cast<Bytes>(std::llround(solved.objective)) * unit + c.through_bytes;
  std::vector<Step> op_steps;
  std::vector<OpId> order = expand(node_step, &op_steps);
  if (inexact.empty() && !multi) {
    std::vector<int> pos(U(c.n), -1);  // not Positions(): that throws on what we test here
    for (size_t k = 0; k < order.size(); ++k) pos[U(c.local_of[U(order[k])])] = static_cast<int>(k);
    for (int i = 0; i < c.n && inexact.empty(); ++i)
      for (int p : c.preds[U(i)])
        if (pos[U(p)] >= pos[U(i)]) inexact = "the decoded order is not topological";
  }
  if (const Bytes decoded = reduced_peak(node_step); inexact.empty() && decoded > objective)
    inexact = "decoded peak " + std::to_string(decoded) + " exceeds the objective " +
              std::to_string(objective);
  if (!inexact.empty()) {
    result.status = ModelStatus::kError;
    result.call = CallOutcome::kError;
    result.from_warm_start = true;
    result.note +=
        "; GLPK's solution is numerically inexact (" + inexact + "); kept the warm start";
    // finish() calls the warm start optimal when our own bound (not GLPK's) proves it.
    const Bytes peak = inc_peak;
    return finish(std::move(inc_order), std::move(inc_op_steps), peak, lower);
  }
  Bytes bound = std::isfinite(solved.best_bound)
                    ? static_cast<Bytes>(std::ceil(solved.best_bound - 1e-6)) * unit
                    : 0;
  bound = std::max(bound + c.through_bytes, lower);
  return finish(std::move(order), std::move(op_steps), objective, bound);
}

}  // namespace roam::ilp
