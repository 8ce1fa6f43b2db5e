#include "ilp/order_ilp.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <queue>
#include <stdexcept>
#include <utility>

#include "core/deadline.h"
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

constexpr double kInf = std::numeric_limits<double>::infinity();

// A linear expression constant + coef * column (column -1: constant only).
struct Lin {
  double constant = 0.0;
  int col = -1;
  double coef = 0.0;
  bool IsConst() const { return col < 0; }
};

// The problem the model is built over: the subgraph's ops contracted into nodes, a
// topological order of them, the steps each may take and the incumbent (node -> step).
struct Reduction {
  Reduction(const Context& context, bool multi_stream, Reduced reduced)
      : c(context), multi(multi_stream), r(std::move(reduced)) {}
  const Context& c;
  bool multi = false;
  int max_concurrency = 0;  // multi-stream: the most nodes one step may run; 0 = unbounded
  Reduced r;
  std::vector<int> warm_pos;  // local op -> position in the warm start
  std::vector<int> alive;     // node ids
  std::vector<int> topo;      // alive nodes, topological
  int num_nodes = 0, num_steps = 0;
  std::vector<int> asap, alap, inc_step;
};

// Topological order of the nodes (Kahn), smallest warm position of the head first.
std::vector<int> KahnOrder(const Reduction& x) {
  std::vector<int> topo;
  std::vector<int> missing(U(x.c.n), 0);
  using Item = std::pair<int, int>;  // (warm position, node)
  std::priority_queue<Item, std::vector<Item>, std::greater<>> ready;
  for (int v : x.alive) {
    missing[U(v)] = static_cast<int>(x.r.nodes[U(v)].preds.size());
    if (missing[U(v)] == 0) ready.push({x.warm_pos[U(v)], v});
  }
  while (!ready.empty()) {
    const int v = ready.top().second;
    ready.pop();
    topo.push_back(v);
    for (int s : x.r.nodes[U(v)].succs)
      if (--missing[U(s)] == 0) ready.push({x.warm_pos[U(s)], s});
  }
  if (static_cast<int>(topo.size()) != x.num_nodes)
    throw std::logic_error("order ILP: the contracted graph has a cycle");
  return topo;
}

// The incumbent, single stream: the Kahn order, then every symmetry class's positions handed
// to its members in chain order; the chain edges join the dependencies after that (the
// canonical incumbent respects them). Returns the edges added.
int CanonicalIncumbent(Reduction& x) {
  int symmetric = 0;
  for (int k = 0; k < x.num_nodes; ++k) x.inc_step[U(x.topo[U(k)])] = k;
  for (const auto& members : x.r.classes) {
    std::vector<int> slots;
    for (int v : members) slots.push_back(x.inc_step[U(v)]);
    std::sort(slots.begin(), slots.end());
    for (size_t k = 0; k < members.size(); ++k) x.inc_step[U(members[k])] = slots[k];
    for (size_t k = 0; k + 1 < members.size(); ++k) {
      x.r.nodes[U(members[k])].succs.push_back(members[k + 1]);
      x.r.nodes[U(members[k + 1])].preds.push_back(members[k]);
      Sort(x.r.nodes[U(members[k])].succs);
      Sort(x.r.nodes[U(members[k + 1])].preds);
      ++symmetric;
    }
  }
  std::sort(x.topo.begin(), x.topo.end(),
            [&](int a, int b) { return x.inc_step[U(a)] < x.inc_step[U(b)]; });
  return symmetric;
}

// ASAP/ALAP spans. Single stream: an op can run no earlier than after all its ancestors and no
// later than before all its descendants. Multi-stream: longest paths.
void Spans(Reduction& x) {
  const auto& nodes = x.r.nodes;
  x.asap.assign(U(x.c.n), 0);
  x.alap.assign(U(x.c.n), x.num_steps - 1);
  if (x.multi) {
    for (int v : x.topo)
      for (int p : nodes[U(v)].preds) x.asap[U(v)] = std::max(x.asap[U(v)], x.asap[U(p)] + 1);
    for (auto it = x.topo.rbegin(); it != x.topo.rend(); ++it)
      for (int s : nodes[U(*it)].succs) x.alap[U(*it)] = std::min(x.alap[U(*it)], x.alap[U(s)] - 1);
    for (int v : x.topo)
      if (x.asap[U(v)] > x.alap[U(v)])
        throw std::invalid_argument("order ILP: " + std::to_string(x.num_steps) +
                                    " steps are fewer than the longest dependency chain");
    return;
  }
  const size_t words = (U(x.c.n) + 63) / 64;
  std::vector<std::uint64_t> anc(U(x.c.n) * words, 0), desc(U(x.c.n) * words, 0);
  auto bits = [&](std::vector<std::uint64_t>& m, int v) { return m.data() + U(v) * words; };
  for (int v : x.topo)
    for (int p : nodes[U(v)].preds) {
      std::uint64_t* a = bits(anc, v);
      const std::uint64_t* b = bits(anc, p);
      for (size_t w = 0; w < words; ++w) a[w] |= b[w];
      a[U(p) / 64] |= std::uint64_t{1} << (U(p) % 64);
    }
  for (auto it = x.topo.rbegin(); it != x.topo.rend(); ++it)
    for (int s : nodes[U(*it)].succs) {
      std::uint64_t* a = bits(desc, *it);
      const std::uint64_t* b = bits(desc, s);
      for (size_t w = 0; w < words; ++w) a[w] |= b[w];
      a[U(s) / 64] |= std::uint64_t{1} << (U(s) % 64);
    }
  for (int v : x.alive) {
    int na = 0, nd = 0;
    for (size_t w = 0; w < words; ++w) {
      na += std::popcount(bits(anc, v)[w]);
      nd += std::popcount(bits(desc, v)[w]);
    }
    x.asap[U(v)] = na;
    x.alap[U(v)] = x.num_nodes - 1 - nd;
  }
}

// The incumbent, multi-stream: the warm order packed into steps, or ASAP when that does not
// fit.
void MultiStreamIncumbent(Reduction& x, const std::vector<OpId>& warm) {
  bool fits = true;
  int last = 0;
  std::vector<int> load(U(x.num_steps) + U(x.c.n) + 1, 0);
  for (OpId op : warm) {
    const int v = x.c.local_of[U(op)];
    int s = x.num_steps >= x.c.n ? x.warm_pos[U(v)] : last;
    for (int p : x.r.nodes[U(v)].preds) s = std::max(s, x.inc_step[U(p)] + 1);
    while (x.max_concurrency > 0 && load[U(s)] >= x.max_concurrency) ++s;
    if (s > x.alap[U(v)]) fits = false;
    ++load[U(s)];
    x.inc_step[U(v)] = last = s;
  }
  if (!fits)
    for (int v : x.alive) x.inc_step[U(v)] = x.asap[U(v)];
}

// Expands node steps into an order of the subgraph's ops (and steps per op).
std::vector<OpId> Expand(const Reduction& x, const std::vector<int>& node_step,
                         std::vector<Step>* op_steps) {
  std::vector<int> by_step = x.alive;
  std::sort(by_step.begin(), by_step.end(), [&](int a, int b) {
    return std::make_pair(node_step[U(a)], x.warm_pos[U(a)]) <
           std::make_pair(node_step[U(b)], x.warm_pos[U(b)]);
  });
  std::vector<OpId> order;
  if (op_steps) op_steps->clear();
  for (int v : by_step)
    for (int i : x.r.nodes[U(v)].ops) {
      order.push_back(x.c.ops[U(i)]);
      if (op_steps) op_steps->push_back(node_step[U(v)]);
    }
  return order;
}

// Peak of the reduced model for node steps (the ILP's objective at an integer point).
Bytes ReducedPeak(const Reduction& x, const std::vector<int>& node_step) {
  std::vector<int> step(U(x.c.n));
  for (int v : x.alive)
    for (int i : x.r.nodes[U(v)].ops) step[U(i)] = node_step[U(v)];
  return PeakAtSteps(x.c, step, x.num_steps);
}

// Lower bound: every block needs all it touches at its step; forced residency comes later.
Bytes BlockLowerBound(const Reduction& x) {
  Bytes lower = 0;
  for (int v : x.alive) {
    Bytes sum = 0;
    for (int k : x.r.nodes[U(v)].touches) sum += x.c.storages[U(k)].size;
    lower = std::max(lower, sum);
  }
  for (const SubStorage& s : x.c.storages)
    if (s.kind == Kind::kIn && s.to_end) lower = std::max(lower, s.size);  // crude but valid
  return lower + x.c.through_bytes;
}

// The model's size, estimated before building anything.
std::int64_t EstimateNonzeros(const Reduction& x) {
  std::int64_t estimate = 0;
  for (int v : x.alive) {
    const std::int64_t span = x.alap[U(v)] - x.asap[U(v)];
    estimate += span * (3 + 2 * static_cast<std::int64_t>(x.r.nodes[U(v)].preds.size()));
  }
  for (size_t k = 0; k < x.c.storages.size(); ++k) {
    const std::int64_t users = static_cast<std::int64_t>(x.r.storage_nodes[k].size());
    estimate += std::int64_t{x.num_steps} * (1 + 3 * users) / (x.c.storages[k].to_end ? 2 : 1);
  }
  return estimate;
}

// MODeL's formulation over a Reduction: R(v, s), "node v has run at step s or before", one
// binary per step of v's span, with the incumbent's values grown alongside the columns.
class ModelBuilder {
 public:
  explicit ModelBuilder(const Reduction& x) : x_(x), first_col_(U(x.c.n), -1) {
    for (int v : x.alive)
      for (int s = x.asap[U(v)]; s < x.alap[U(v)]; ++s) {
        const int col = AddCol(ColumnKind::kBinary, 0, 1, 0, x.inc_step[U(v)] <= s ? 1.0 : 0.0);
        if (s == x.asap[U(v)]) first_col_[U(v)] = col;
      }
  }

  Problem& lp() { return lp_; }
  std::vector<double>& values() { return values_; }

  Lin R(int v, int s) const {
    if (s < x_.asap[U(v)]) return {0.0, -1, 0.0};
    if (s >= x_.alap[U(v)]) return {1.0, -1, 0.0};
    return {0.0, first_col_[U(v)] + (s - x_.asap[U(v)]), 1.0};
  }

  int AddCol(ColumnKind kind, double lo, double hi, double obj, double value) {
    values_.push_back(value);
    return lp_.AddColumn(kind, lo, hi, obj);
  }

  // Monotone in s; precedence (v has run by s only if each predecessor has run by s - 1);
  // multi-stream with a concurrency limit, at most K nodes run at step s (those that have run
  // by s but not by s - 1); single stream, exactly s + 1 blocks have run by step s.
  void AddOrderRows() {
    for (int v : x_.alive)
      for (int s = x_.asap[U(v)]; s + 1 < x_.alap[U(v)]; ++s) {
        terms_ = {{R(v, s).col, 1.0}, {R(v, s + 1).col, -1.0}};
        lp_.AddRow(terms_, -kInf, 0.0);
      }
    for (int v : x_.alive)
      for (int u : x_.r.nodes[U(v)].preds)
        for (int s = x_.asap[U(v)]; s < x_.alap[U(v)]; ++s) {
          const Lin before = R(u, s - 1);
          if (before.IsConst()) {
            if (before.constant == 1.0) continue;
            throw std::logic_error("order ILP: spans contradict a dependency");
          }
          terms_ = {{R(v, s).col, 1.0}, {before.col, -1.0}};
          lp_.AddRow(terms_, -kInf, 0.0);
        }
    if (x_.multi && x_.max_concurrency > 0)
      for (int s = 0; s < x_.num_steps; ++s) {
        terms_.clear();
        double constant = 0.0;
        for (int v : x_.alive) {
          if (s < x_.asap[U(v)] || s > x_.alap[U(v)]) continue;
          for (const auto& [r, sign] : {std::pair(R(v, s), 1.0), std::pair(R(v, s - 1), -1.0)}) {
            if (r.IsConst())
              constant += sign * r.constant;
            else
              terms_.emplace_back(r.col, sign);
          }
        }
        if (!terms_.empty()) lp_.AddRow(terms_, -kInf, x_.max_concurrency - constant);
      }
    if (x_.multi) return;
    for (int s = 0; s < x_.num_steps; ++s) {
      terms_.clear();
      double constant = 0.0;
      for (int v : x_.alive) {
        const Lin r = R(v, s);
        if (r.IsConst())
          constant += r.constant;
        else
          terms_.emplace_back(r.col, 1.0);
      }
      if (!terms_.empty()) lp_.AddRow(terms_, s + 1 - constant, s + 1 - constant);
    }
  }

  // Residency (MODeL's C + P) of storage k, in units of `unit`, added to the peak rows' terms:
  // resident at s when its creator has run by s and some user has not run before s. Outside
  // the maximum useful lifetime it is 0; where the spans force it, it is the constant 1
  // (forced preservation).
  void AddResidency(size_t k, std::int64_t unit) {
    const SubStorage& st = x_.c.storages[k];
    const double size = static_cast<double>(st.size / unit);
    const int creator = x_.r.node_of_storage[k];
    std::vector<int> users;
    for (int u : x_.r.storage_nodes[k])
      if (u != creator) users.push_back(u);
    if (users.empty() && creator >= 0) users.push_back(creator);
    const int lo = creator >= 0 ? x_.asap[U(creator)] : 0;
    int hi = x_.num_steps - 1;
    if (!st.to_end) {
      hi = 0;
      for (int u : users) hi = std::max(hi, x_.alap[U(u)]);
    }
    for (int s = lo; s <= hi; ++s) {
      const Lin made = creator >= 0 ? R(creator, s) : Lin{1.0, -1, 0.0};
      const Lin live =
          st.to_end || (made.IsConst() && made.constant == 0.0) ? made : Resident(made, users, s);
      peak_const_[U(s)] += size * live.constant;
      if (!live.IsConst()) peak_terms_[U(s)].emplace_back(live.col, size * live.coef);
    }
  }

  // The forced residency: the least each step's sum can be with every variable at its bound.
  double Forced() const {
    double forced = 0.0;
    for (int s = 0; s < x_.num_steps; ++s) {
      double least = peak_const_[U(s)];
      for (const auto& [col, coef] : peak_terms_[U(s)]) least += std::min(0.0, coef);
      forced = std::max(forced, least);
    }
    return forced;
  }

  // The peak column (the objective) above every step's residency.
  void AddPeak(double peak_lo, double ub_units) {
    const int peak_col = AddCol(ColumnKind::kInteger, peak_lo, ub_units, 1.0, ub_units);
    for (int s = 0; s < x_.num_steps; ++s) {
      if (peak_terms_[U(s)].empty()) continue;
      terms_ = peak_terms_[U(s)];
      for (auto& t : terms_) t.second = -t.second;
      terms_.emplace_back(peak_col, 1.0);
      lp_.AddRow(terms_, peak_const_[U(s)], kInf);
    }
  }

 private:
  double ValueOf(const Lin& l) const {
    return l.constant + (l.IsConst() ? 0.0 : l.coef * values_[U(l.col)]);
  }

  // Resident at s: created (`made`) and some user not surely done before s.
  Lin Resident(const Lin& made, const std::vector<int>& users, int s) {
    std::vector<Lin> pending;  // users not surely done before s
    bool some_user_ahead = false;
    for (int u : users) {
      const Lin done = R(u, s - 1);
      if (done.IsConst() && done.constant == 1.0) continue;
      if (done.IsConst()) some_user_ahead = true;
      pending.push_back(done);
    }
    if (pending.empty()) return {0.0, -1, 0.0};
    if (some_user_ahead) return made;  // a user surely runs at s or later: resident iff created
    if (pending.size() == 1 && made.IsConst())
      return {1.0, pending[0].col, -1.0};  // resident iff that user has not run
    double v = 0.0;
    for (const Lin& done : pending) v = std::max(v, ValueOf(made) - ValueOf(done));
    const Lin live = {0.0, AddCol(ColumnKind::kContinuous, 0, 1, 0, v), 1.0};
    for (const Lin& done : pending) {
      // live - made + done >= 0
      terms_ = {{live.col, 1.0}};
      double rhs = 0.0;
      if (made.IsConst())
        rhs += made.constant;
      else
        terms_.emplace_back(made.col, -1.0);
      terms_.emplace_back(done.col, 1.0);
      lp_.AddRow(terms_, rhs, kInf);
    }
    return live;
  }

  const Reduction& x_;
  Problem lp_;
  std::vector<double> values_;  // incumbent, grown with the columns
  std::vector<int> first_col_;
  std::vector<std::pair<int, double>> terms_;
  std::vector<std::vector<std::pair<int, double>>> peak_terms_ =
      std::vector<std::vector<std::pair<int, double>>>(U(x_.num_steps));
  std::vector<double> peak_const_ = std::vector<double>(U(x_.num_steps), 0.0);
};

// Why GLPK's solution, decoded into node steps and `order`, is not what it claims (empty when
// it is): two blocks at one step, an order that is not topological, or a peak above the
// objective.
std::string Inexact(const Reduction& x, const std::vector<int>& node_step,
                    const std::vector<OpId>& order, Bytes objective) {
  const Context& c = x.c;
  if (!x.multi) {
    std::vector<int> seen(U(x.num_steps), 0);
    for (int v : x.alive)
      if (seen[U(node_step[U(v)])]++) return "two blocks decoded at one step";
    std::vector<int> pos(U(c.n), -1);  // not Positions(): that throws on what we test here
    for (size_t k = 0; k < order.size(); ++k) pos[U(c.local_of[U(order[k])])] = static_cast<int>(k);
    for (int i = 0; i < c.n; ++i)
      for (int p : c.preds[U(i)])
        if (pos[U(p)] >= pos[U(i)]) return "the decoded order is not topological";
  }
  if (const Bytes decoded = ReducedPeak(x, node_step); decoded > objective)
    return "decoded peak " + std::to_string(decoded) + " exceeds the objective " +
           std::to_string(objective);
  return "";
}

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
  const Context c = BuildContext(graph, model, deps, sub);
  OrderIlpResult result;
  const bool multi = params.multi_stream;

  // Warm start: positions of the local ops.
  std::vector<OpId> warm(warm_start.begin(), warm_start.end());
  if (warm.empty()) {
    for (OpId op : graph.program_order)
      if (c.local_of[U(op)] >= 0) warm.push_back(op);
  }
  Reduction x(c, multi, Contract(c, params.contract && !multi));
  x.max_concurrency = params.max_concurrency;
  x.warm_pos = Positions(c, warm);
  result.warm_start_peak = PeakAtSteps(c, x.warm_pos, c.n);

  if (params.symmetry_breaking && !multi) FindSymmetryClasses(c, x.r);
  result.contracted = x.r.contracted;
  for (int v = 0; v < c.n; ++v)
    if (x.r.nodes[U(v)].alive) x.alive.push_back(v);
  x.num_nodes = static_cast<int>(x.alive.size());
  result.nodes = x.num_nodes;
  x.num_steps =
      multi ? (params.multi_stream_steps > 0 ? params.multi_stream_steps : c.n) : x.num_nodes;
  x.topo = KahnOrder(x);
  x.inc_step.assign(U(c.n), -1);
  if (!multi) result.symmetric += CanonicalIncumbent(x);
  Spans(x);
  if (multi) MultiStreamIncumbent(x, warm);

  std::vector<Step> inc_op_steps;
  std::vector<OpId> inc_order = Expand(x, x.inc_step, &inc_op_steps);
  const Bytes inc_peak = ReducedPeak(x, x.inc_step);
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
    result.seconds = SecondsSince(started);
    return result;
  };
  // Keeps the warm start with this status and note.
  auto keep_warm = [&](ModelStatus status, std::string note, Bytes bound) {
    result.status = status;
    result.from_warm_start = true;
    result.note = std::move(note);
    return finish(std::move(inc_order), std::move(inc_op_steps), inc_peak, bound);
  };

  // Sizes in units of their GCD; live_through is a constant added back at the end.
  std::int64_t unit = 0;
  for (const SubStorage& s : c.storages) unit = std::gcd(unit, s.size);
  if (unit == 0) unit = 1;
  const Bytes lower = BlockLowerBound(x);
  if (x.num_nodes <= 1 || lower >= inc_peak)
    return keep_warm(ModelStatus::kOptimal,
                     x.num_nodes <= 1 ? "nothing to order" : "warm start meets the lower bound",
                     std::max(lower, inc_peak));
  const std::int64_t ub_units = (inc_peak - c.through_bytes) / unit;
  const std::int64_t lb_units = (lower - c.through_bytes + unit - 1) / unit;
  if (const std::int64_t estimate = EstimateNonzeros(x); estimate > params.max_nonzeros) {
    result.work_limited = true;  // a size limit: the same on any machine
    return keep_warm(ModelStatus::kFeasibleTimeLimit,
                     "model too large (about " + std::to_string(estimate) + " nonzeros, limit " +
                         std::to_string(params.max_nonzeros) + "): warm start kept",
                     lower);
  }

  ModelBuilder build(x);
  build.AddOrderRows();
  for (size_t k = 0; k < c.storages.size(); ++k) {
    // The build is part of the time limit: give up on the model, keeping the warm start, once
    // it has used the whole limit (the residency rows are most of the build).
    if (SecondsSince(started) > params.solve.time_limit_s)
      return keep_warm(ModelStatus::kFeasibleTimeLimit,
                       "time limit reached while building the model: warm start kept", lower);
    build.AddResidency(k, unit);
  }
  const double peak_lo = std::max(static_cast<double>(lb_units), build.Forced());
  if (!multi && peak_lo >= static_cast<double>(ub_units))
    // The memory forced at some step already reaches the warm start's peak.
    return keep_warm(ModelStatus::kOptimal, "warm start meets the forced-residency bound",
                     inc_peak);
  build.AddPeak(peak_lo, static_cast<double>(ub_units));
  Problem& lp = build.lp();
  result.model_built = true;
  result.columns = lp.num_columns();
  result.rows = lp.num_rows();
  result.nonzeros = lp.num_nonzeros();

  SolveParams solve = params.solve;
  solve.time_limit_s = std::max(0.0, solve.time_limit_s - SecondsSince(started));
  if (solve.stop_at_objective)
    *solve.stop_at_objective = (*solve.stop_at_objective - static_cast<double>(c.through_bytes)) /
                               static_cast<double>(unit);
  // A peak row adds every storage's size times binaries that GLPK may leave within its
  // integrality tolerance of 0 or 1: at 1e-5 and millions of units of storages that hid a unit of
  // peak, and the decoded order peaked above GLPK's objective.
  double total_units = 0.0;
  for (const SubStorage& s : c.storages) total_units += static_cast<double>(s.size / unit);
  solve.integrality_tolerance = IntegralityToleranceFor(total_units, solve.integrality_tolerance);
  SolveResult solved = lp.Solve(solve, std::span<const double>(build.values()));
  result.status = solved.status;
  result.call = solved.call;
  result.from_warm_start = solved.from_incumbent;
  result.note = solved.message;
  result.lp_iterations = solved.lp_iterations;
  result.bb_nodes = solved.nodes;
  result.work_limited = solved.work_limited;
  if (!solved.has_solution) throw std::logic_error("order ILP: no solution despite warm start");

  std::vector<int> node_step(U(c.n), -1);
  for (int v : x.alive) {
    int s = x.asap[U(v)];
    while (s < x.alap[U(v)] && solved.values[U(build.R(v, s).col)] < 0.5) ++s;
    node_step[U(v)] = s;
  }
  const Bytes objective =
      static_cast<Bytes>(std::llround(solved.objective)) * unit + c.through_bytes;
  std::vector<Step> op_steps;
  std::vector<OpId> order = Expand(x, node_step, &op_steps);
  // A solution GLPK accepted within its tolerances may still not decode to what it claims:
  // then neither it nor GLPK's bound is trusted, and the warm start is the answer.
  if (const std::string inexact = Inexact(x, node_step, order, objective); !inexact.empty()) {
    result.call = CallOutcome::kError;
    // finish() calls the warm start optimal when our own bound (not GLPK's) proves it.
    return keep_warm(ModelStatus::kError,
                     result.note + "; GLPK's solution is numerically inexact (" + inexact +
                         "); kept the warm start",
                     lower);
  }
  Bytes bound = std::isfinite(solved.best_bound)
                    ? static_cast<Bytes>(std::ceil(solved.best_bound - 1e-6)) * unit
                    : 0;
  bound = std::max(bound + c.through_bytes, lower);
  return finish(std::move(order), std::move(op_steps), objective, bound);
}

}  // namespace roam::ilp
