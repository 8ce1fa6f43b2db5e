// The in-order lower bound (bound.h InOrderLowerBound, docs/remat.md "The in-order lower
// bound").
//
// Why it holds: in a schedule whose original computations follow `order`, the t-th original
// runs at a step of its own, and every planned storage the base order holds live there (made
// at or before t, touched at or after t) is, at that step, either resident (the original or a
// copy of it, the same bytes) or made again after it by a copy of its root's producer, before
// the next original that touches it. A storage touched at t, or a graph output (never
// recomputed), is resident. So at each step where the base order's live bytes exceed the
// budget, the storages evicted there free at least the excess, and each (storage, gap between
// two of its touches) evicted somewhere needs a computation of its producer in that gap. One
// computation of a producer serves at most one gap of each of its k storages, so each such
// gap is charged 1/k of the producer's cost. The least charge is a covering problem, bounded
// below by a branch and bound over it whose every bound is proven; copies' inputs, working
// memory and steps between originals are left out, which is why it bounds and does not plan.
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
  std::vector<int> storages_of(U(graph.num_ops()), 0);  // planned storages each op makes
  for (StorageId s : model.planned) {
    const OpId p = graph.tensors[U(model.storages[U(s)].root)].producer;
    if (p != kNoOp) ++storages_of[U(p)];
  }
  const std::vector<double> costs = detail::OpCosts(graph);
  // What evicting a storage for a gap is charged: its share of its producer's cost, in percent
  // of the total (GLPK's tolerances then sit well below what is reported).
  auto percent = [&](OpId p) { return costs[U(p)] * 100 / total / storages_of[U(p)]; };
  ilp::Problem problem;
  std::vector<std::vector<std::pair<int, Bytes>>> rows(excess_steps.size());
  for (StorageId s : model.planned) {
    const Storage& st = model.storages[U(s)];
    const OpId p = graph.tensors[U(st.root)].producer;
    if (st.output || p == kNoOp || !recomputable[U(p)]) continue;
    const std::vector<Step>& at = touched[U(s)];
    for (size_t j = 0; j + 1 < at.size(); ++j) {
      int column = -1;
      for (Step t = at[j] + 1; t < at[j + 1]; ++t) {
        const int row = excess_row[U(t)];
        if (row < 0) continue;
        if (column < 0) column = problem.AddColumn(ilp::ColumnKind::kBinary, 0, 1, percent(p));
        rows[U(row)].emplace_back(column, st.size);
      }
    }
  }
  std::int64_t entries = 0;
  for (const auto& row : rows) entries += static_cast<std::int64_t>(row.size());
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
    // In units of the step's excess, a storage larger than it counting as exactly it (the same
    // integer points, a tighter relaxation).
    std::vector<std::pair<int, double>> row;
    for (const auto& [column, size] : rows[r])
      row.emplace_back(column,
                       std::min(1.0, static_cast<double>(size) / static_cast<double>(need)));
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
  const ilp::ProvenBound b = ilp::ProveLowerBound(problem, bp);
  out.solver = b.message;
  // Every column at 1 covers every row (can >= need above), so the cover exists: a bound that
  // is not finite proves nothing here. Shaved as the compute bound is.
  if (std::isfinite(b.bound)) out.overhead = std::max(0.0, b.bound / 100 * (1 - 1e-6));
  return out;
}

}  // namespace roam::remat
