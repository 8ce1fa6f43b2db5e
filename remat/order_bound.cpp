// The in-order lower bound (bound.h InOrderLowerBound, docs/remat.md "The in-order lower
// bound").
//
// Why it holds: in a schedule whose original computations follow `order`, the t-th original
// runs at a step of its own, and every planned storage the base order holds live there (made
// at or before t, touched at or after t) is, at that step, either resident (the original or a
// copy of it, the same bytes) or made again after it by a copy of its root's producer, before
// the next original that touches it. A storage touched at t, or a graph output (never
// recomputed), is resident. So at each step where the base order's live bytes exceed the
// budget (a row), the storages evicted there free at least the excess, and a (storage, gap
// between two of its touches) evicted at some row of the gap needs a copy of its producer
// after that row and before the gap ends: in the window from the gap's first row on. Copies
// are counted per op and window, so one copy serves every window it lies in and none is
// counted twice.
//
// The copy's inputs (input_levels): an input the order has freed before the gap's first row is
// resident at the copy, so either it is resident at that row (held, or made before it: its bytes
// count there against the excess) or a copy of its producer runs after that row, within the
// window, before the copy that reads it; and so on for that copy's inputs, to input_levels
// levels. Reading any real schedule this way gives a point of the model at no more cost, so the
// model's least cost bounds the schedule's. Deeper inputs, the copies' working memory,
// a hold's bytes at rows other than the gap's first, and the steps between originals are left
// out, which is why it bounds and does not plan.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/memory_model.h"
#include "ilp/glpk.h"
#include "ilp/proven_bound.h"
#include "remat/bound.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"
#include "remat/model.h"

namespace roam::remat {

OrderBound InOrderLowerBound(const Graph& graph, std::span<const OpId> order, Bytes budget,
                             const RematParams& params, double time_limit_s, double enough) {
  OrderBound out;
  const double total = TotalCost(graph);
  const int n = static_cast<int>(order.size());
  if (n == 0 || total <= 0) return out;
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  const std::vector<Lifetime> life = ComputeLifetimes(graph, model, order);
  const std::vector<Bytes> live = MemoryProfile(model, life, n);
  std::vector<int> excess_row(U(n), -1);  // per step above the budget: its row
  std::vector<int> excess_steps;
  for (int t = 0; t < n; ++t)
    if (live[U(t)] > budget) {
      excess_row[U(t)] = static_cast<int>(excess_steps.size());
      excess_steps.push_back(t);
    }
  if (excess_steps.empty()) return out;  // the order fits as it is

  // Each storage's touches in base-order steps; the gaps between consecutive ones.
  std::vector<std::vector<Step>> touched(model.storages.size());
  for (int t = 0; t < n; ++t)
    for (StorageId s : model.Touches(order[U(t)])) touched[U(s)].push_back(t);
  const std::vector<char> recomputable = detail::MakeOpFlags(graph, params).recomputable;
  const std::vector<double> costs = detail::OpCosts(graph);
  const int excess = static_cast<int>(excess_steps.size());

  // Evictions: a binary per (storage, gap between two of its touches) with steps above the
  // budget in it, those steps' rows k in [first, last].
  struct Eviction {
    StorageId storage;
    OpId producer;
    int first, last;
    int column;
  };
  ilp::Problem problem;
  std::vector<Eviction> evictions;
  for (StorageId s : model.planned) {
    const Storage& st = model.storages[U(s)];
    const OpId p = graph.tensors[U(st.root)].producer;
    if (st.output || p == kNoOp || !recomputable[U(p)]) continue;
    const std::vector<Step>& at = touched[U(s)];
    for (size_t j = 0; j + 1 < at.size(); ++j) {
      int first = -1, last = -1;
      for (Step t = at[j] + 1; t < at[j + 1]; ++t)
        if (excess_row[U(t)] >= 0) {
          if (first < 0) first = excess_row[U(t)];
          last = excess_row[U(t)];
        }
      if (first >= 0)
        evictions.push_back({s, p, first, last, problem.AddColumn(ilp::ColumnKind::kBinary, 0, 1)});
    }
  }
  // A copy needed in the window [first, last]: after the step of row `first` and before the one
  // of row last + 1. Per op, U(b) counts its copies after row 0's step and before row b + 1's
  // (integer, nondecreasing in b), so copies in a window are U(last) - U(first - 1), one copy
  // serves every window it lies in, and the op's copies cost U at its last breakpoint.
  struct Need {
    int eviction;
    OpId op;                 // a copy of it in the window, or
    std::vector<int> holds;  // one of these storages resident at the window's first row
  };
  std::vector<Need> needs;
  // Holds: a storage the order has freed, resident at a row's step (more bytes there).
  std::vector<std::vector<std::pair<int, Bytes>>> held(U(excess));
  std::vector<std::vector<std::pair<StorageId, int>>> hold_of(U(excess));
  auto hold = [&](StorageId s, int row) {
    for (const auto& [storage, column] : hold_of[U(row)])
      if (storage == s) return column;
    const int column = problem.AddColumn(ilp::ColumnKind::kBinary, 0, 1);
    hold_of[U(row)].emplace_back(s, column);
    held[U(row)].emplace_back(column, model.storages[U(s)].size);
    return column;
  };
  // The copy of `op` that a need asks for (when none of `holds` is resident) runs after the
  // window's first row, so each of op's inputs the order has freed by then is resident at that
  // row (held since, or made before it and kept) or made again by a copy in the window, before
  // op's: a need of its own, one level deeper, with that input's hold added to the choices.
  auto add_inputs = [&](auto& self, int e, OpId op, const std::vector<int>& holds,
                        int level) -> void {
    if (level > params.order_bound.input_levels) return;
    const Eviction& ev = evictions[U(e)];
    const Step at_first = excess_steps[U(ev.first)];
    std::vector<StorageId> inputs;
    for (TensorId i : graph.ops[U(op)].inputs) {
      const StorageId s = model.storage_of[U(i)];
      const Storage& st = model.storages[U(s)];
      if (!st.planned() || st.output || touched[U(s)].empty() || touched[U(s)].back() >= at_first ||
          std::find(inputs.begin(), inputs.end(), s) != inputs.end())
        continue;  // resident there anyway (or, live in the order, its own eviction's concern)
      inputs.push_back(s);
      const OpId q = graph.tensors[U(st.root)].producer;
      std::vector<int> choices = holds;
      choices.push_back(hold(s, ev.first));
      const bool copyable = q != kNoOp && recomputable[U(q)];
      needs.push_back({e, copyable ? q : kNoOp, choices});
      if (copyable) self(self, e, q, choices, level + 1);
    }
  };
  for (size_t e = 0; e < evictions.size(); ++e) {
    needs.push_back({static_cast<int>(e), evictions[e].producer, {}});
    add_inputs(add_inputs, static_cast<int>(e), evictions[e].producer, {}, 1);
  }
  std::vector<std::vector<int>> breaks(U(graph.num_ops()));
  for (const Need& need : needs) {
    if (need.op == kNoOp) continue;
    const Eviction& ev = evictions[U(need.eviction)];
    breaks[U(need.op)].push_back(ev.last);
    if (ev.first > 0) breaks[U(need.op)].push_back(ev.first - 1);
  }
  std::vector<std::vector<int>> count_column(U(graph.num_ops()));
  for (OpId o = 0; o < graph.num_ops(); ++o) {
    std::vector<int>& b = breaks[U(o)];
    std::sort(b.begin(), b.end());
    b.erase(std::unique(b.begin(), b.end()), b.end());
    for (size_t i = 0; i < b.size(); ++i) {
      const double cost = i + 1 == b.size() ? costs[U(o)] * 100 / total : 0.0;
      count_column[U(o)].push_back(problem.AddColumn(ilp::ColumnKind::kInteger, 0, b[i] + 1, cost));
      if (i > 0)
        problem.AddRow(std::vector<std::pair<int, double>>{{count_column[U(o)][i], 1.0},
                                                           {count_column[U(o)][i - 1], -1.0}},
                       0.0, std::numeric_limits<double>::infinity());
    }
  }
  auto count = [&](OpId o, int b) {
    const std::vector<int>& at = breaks[U(o)];
    return count_column[U(o)][U(std::lower_bound(at.begin(), at.end(), b) - at.begin())];
  };
  std::int64_t entries = 0;
  for (const Need& need : needs) {
    const Eviction& ev = evictions[U(need.eviction)];
    std::vector<std::pair<int, double>> row = {{ev.column, 1.0}};
    for (int h : need.holds) row.emplace_back(h, -1.0);
    if (need.op != kNoOp) {
      row.emplace_back(count(need.op, ev.last), -1.0);
      if (ev.first > 0) row.emplace_back(count(need.op, ev.first - 1), 1.0);
    }
    entries += static_cast<std::int64_t>(row.size());
    problem.AddRow(row, -std::numeric_limits<double>::infinity(), 0.0);
  }
  std::vector<std::vector<std::pair<int, Bytes>>> rows(U(excess));
  for (const Eviction& ev : evictions)
    for (int k = ev.first; k <= ev.last; ++k)
      rows[U(k)].emplace_back(ev.column, model.storages[U(ev.storage)].size);
  for (int k = 0; k < excess; ++k)
    entries += static_cast<std::int64_t>(
        held[U(k)].empty() ? rows[U(k)].size() : 2 * rows[U(k)].size() + held[U(k)].size());
  if (params.order_bound.max_nonzeros > 0 && entries > params.order_bound.max_nonzeros) {
    out.solver = "skipped: more nonzeros than order_bound.max_nonzeros";
    return out;
  }
  for (size_t r = 0; r < rows.size(); ++r) {
    const Bytes need = live[U(excess_steps[r])] - budget;
    Bytes can = 0;
    for (const auto& [column, size] : rows[r]) can += size;
    if (can < need) {  // even evicting all it may, this step stays above the budget
      out.infeasible = true;
      out.solver = "infeasible";
      return out;
    }
    // In units of the step's excess, an eviction larger than it counting as exactly it (the
    // same integer points, a tighter relaxation). Where the step has holds, a second row takes
    // them: there an eviction can count only up to the excess plus every hold.
    const auto scale = static_cast<double>(need);
    std::vector<std::pair<int, double>> row;
    for (const auto& [column, size] : rows[r])
      row.emplace_back(column, std::min(1.0, static_cast<double>(size) / scale));
    problem.AddRow(row, 1.0, std::numeric_limits<double>::infinity());
    if (held[r].empty()) continue;
    double holds = 0;
    row.clear();
    for (const auto& [column, size] : held[r]) {
      row.emplace_back(column, -static_cast<double>(size) / scale);
      holds += static_cast<double>(size) / scale;
    }
    for (const auto& [column, size] : rows[r])
      row.emplace_back(column, std::min(1.0 + holds, static_cast<double>(size) / scale));
    problem.AddRow(row, 1.0, std::numeric_limits<double>::infinity());
  }
  // The cover's least charge, bounded by a branch and bound whose every node's bound roam
  // proves from GLPK's duals by weak duality (ilp::ProveLowerBound). GLPK's own objective is not
  // taken: on GPT-2 XL's rows (sizes of 10^8 bytes against excesses of 10^9, before the rows
  // were scaled) its simplex called a point optimal at 1.28% where a cover of 0.73% exists, and
  // its branch and bound pruned by that (perf/RESULTS.md, "The in-order lower bound").
  ilp::ProvenBoundParams bp;
  const bool branch = params.order_bound.branch_max_nonzeros == 0 ||
                      entries <= params.order_bound.branch_max_nonzeros;
  bp.max_nodes = branch ? std::max<std::int64_t>(1, params.order_bound.max_nodes) : 1;
  bp.max_lp_iterations = params.order_bound.max_lp_iterations;
  bp.time_limit_s = std::max(0.001, std::min(params.order_bound.time_limit_s, time_limit_s));
  bp.enough = enough * 100;
  // The copy counts first: with them integral, the evictions and holds they allow follow
  // (random-layered-100 at 80%: complete in 200 nodes, where branching on the evictions first
  // left leaves open at 2,000; perf/RESULTS.md, "Copies' inputs in the in-order bound").
  bp.branch_first.assign(U(problem.num_columns()), 0);
  for (const std::vector<int>& columns : count_column)
    for (int c : columns) bp.branch_first[U(c)] = 1;
  const ilp::ProvenBound b = ilp::ProveLowerBound(problem, bp);
  out.solver = b.message;
  // A bound that is not finite is not reported: without the holds every eviction at 1 covers
  // every row (can >= need above), and the holds' rows are not trusted to prove a budget out
  // of reach on their own. Shaved as the compute bound is.
  if (std::isfinite(b.bound)) out.overhead = std::max(0.0, b.bound / 100 * (1 - 1e-6));
  return out;
}

}  // namespace roam::remat
