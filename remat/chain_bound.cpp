// The compute lower bound's MILP at a chain of cuts (cut_bound.h BoundAtChain, docs/remat.md
// "The compute lower bound").
//
// One cut L (cost_bound.cpp's argument): L's original computation comes after all of its
// ancestors and before all of its descendants in every schedule, so a storage made before L and
// needed after it is, at L's step, live or made again after L by copies of its writers, whose
// inputs obey the same implication.
//
// Cuts c_0, ..., c_{m-1} on one chain of the DAG (each an ancestor of the next) come in that
// order in every schedule, so every step after c_0 lies in exactly one interval T_j (after c_j,
// before c_{j+1}; T_{m-1} is everything after the last cut). Take any schedule within the
// budget and read off, per cut j, keep[j][s] = "storage s is live at c_j's step" and, per
// interval, redo[j][o] = "a copy of o runs in T_j". Then:
//  - memory: at c_j the kept storages and those c_j must hold fit the budget;
//  - a reader in T_j (an op after c_j and before c_{j+1}, or c_{j+1} itself) of a storage made
//    before c_j finds it live at c_j or made again in T_j: keep[j][s] + redo[j][w] >= 1;
//    a reader after c_j elsewhere, keep[j][s] + sum over i >= j of redo[i][w] >= 1;
//  - a copy in T_j of an op made before c_j reads its inputs the same way within T_j;
//  - a storage live at c_{j+1} that was made before c_j was live at c_j or allocated again in
//    T_j, by a copy of its root's producer: keep[j+1][s] <= keep[j][s] + redo[j][p].
// Each copy lies in one interval, so the objective (sum of redo[j][o] times o's cost) counts no
// copy twice and is at most the schedule's recompute cost; the cheapest assignment is a lower
// bound on every schedule's. What one cut cannot see and the chain adds: a storage dropped at
// c_0 and read both in T_0 and after c_1 is made again in T_0 and then either held at c_1
// (bytes there) or made once more after it (cost again), the recomputation forced at several
// cuts added up rather than maxed. Ops neither before nor after a cut, the copies' working
// memory and their order inside an interval are left out, as at one cut.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/types.h"
#include "ilp/proven_bound.h"
#include "remat/cut_bound.h"

namespace roam::remat::detail {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Per cut: the ops strictly before and after it, and the storages it must hold.
struct CutSide {
  std::vector<char> before, after;
  std::vector<char> fixed;
  Bytes fixed_bytes = 0;
};

CutSide Side(const BoundInputs& in, OpId cut) {
  const Graph& graph = in.graph;
  const MemoryModel& model = in.model;
  CutSide side;
  side.before = ReachableOps(in.deps, cut, /*forward=*/false);
  side.after = ReachableOps(in.deps, cut, /*forward=*/true);
  side.before[U(cut)] = side.after[U(cut)] = 0;
  // Live at the cut in every schedule: what the cut op touches, and outputs (held to the end)
  // made before it.
  side.fixed.assign(model.storages.size(), 0);
  for (StorageId s : model.Touches(cut)) side.fixed[U(s)] = 1;
  for (StorageId s : model.planned) {
    const OpId p = graph.tensors[U(model.storages[U(s)].root)].producer;
    if (model.storages[U(s)].output && p != kNoOp && side.before[U(p)]) side.fixed[U(s)] = 1;
  }
  for (size_t s = 0; s < side.fixed.size(); ++s)
    if (side.fixed[s]) side.fixed_bytes += model.storages[s].size;
  return side;
}

}  // namespace

CutBound BoundAtChain(const BoundInputs& in, std::span<const OpId> cuts, Bytes budget,
                      ilp::ColumnKind kind, const OverheadBoundParams& work, double time_limit_s) {
  const Graph& graph = in.graph;
  const MemoryModel& model = in.model;
  const size_t m = cuts.size();
  CutBound out;
  std::vector<CutSide> sides;
  for (OpId cut : cuts) {
    sides.push_back(Side(in, cut));
    if (sides.back().fixed_bytes > budget) {
      out.infeasible = true;
      out.solver = "no schedule fits at the cut: its forced storages exceed the budget";
      return out;
    }
  }
  auto root_producer = [&](StorageId s) {
    return graph.tensors[U(model.storages[U(s)].root)].producer;
  };

  // Columns in the single cut's order (all keeps, then all redos), so that one cut gives the
  // very model, and so the very bound, it gave before the chain.
  ilp::Problem problem;
  std::vector<std::vector<int>> keep(m, std::vector<int>(model.storages.size(), -1));
  std::vector<std::vector<int>> redo(m, std::vector<int>(U(graph.num_ops()), -1));
  std::vector<std::vector<std::pair<int, double>>> memory(m);
  // The memory rows in units of what the cut leaves free: bytes (10^8 against 10^9 on GPT-2 XL)
  // are the scale on which GLPK's simplex misjudged the in-order bound's LP. A storage larger
  // than that room is never kept.
  for (size_t j = 0; j < m; ++j) {
    const double room = static_cast<double>(budget - sides[j].fixed_bytes);
    for (StorageId s : model.planned) {
      const OpId p = root_producer(s);
      if (sides[j].fixed[U(s)] || p == kNoOp || !sides[j].before[U(p)]) continue;
      const auto size = static_cast<double>(model.storages[U(s)].size);
      keep[j][U(s)] = problem.AddColumn(kind, 0, size <= room ? 1 : 0);
      if (size > 0 && size <= room) memory[j].emplace_back(keep[j][U(s)], size / room);
    }
  }
  for (size_t j = 0; j < m; ++j)
    for (OpId o = 0; o < graph.num_ops(); ++o)
      if (sides[j].before[U(o)] && in.recomputable[U(o)])
        redo[j][U(o)] = problem.AddColumn(kind, 0, 1, in.percent[U(o)]);
  for (size_t j = 0; j < m; ++j) problem.AddRow(memory[j], -kInf, 1.0);

  // At cut j, the storage of t is needed by `needer` (a copy's column in T_j, or -1: a read
  // after the cut, within T_j when `local`): live at the cut, or made again by copies of its
  // writers, those on t's alias chain back to the root when all lie before the cut (t's value
  // is theirs), else at least the root's producer (a copy of s is made by nothing else).
  auto require = [&](size_t j, TensorId t, int needer, bool local) {
    const StorageId s = model.storage_of[U(t)];
    if (keep[j][U(s)] < 0) return;  // fixed, persistent or not made before the cut
    std::vector<OpId> writers = {root_producer(s)};
    if (sides[j].before[U(graph.tensors[U(t)].producer)])
      for (TensorId a = t; a != kNoTensor; a = graph.tensors[U(a)].alias_of)
        writers.push_back(graph.tensors[U(a)].producer);
    for (OpId w : writers) {
      if (w == kNoOp) continue;  // not a writer: nothing to recompute
      std::vector<std::pair<int, double>> row = {{keep[j][U(s)], 1.0}};
      for (size_t i = j; i < (needer < 0 && !local ? m : j + 1); ++i)
        if (redo[i][U(w)] >= 0) row.emplace_back(redo[i][U(w)], 1.0);
      if (needer < 0) {
        problem.AddRow(row, 1.0, kInf);
      } else {
        row.emplace_back(needer, -1.0);
        problem.AddRow(row, 0.0, kInf);
      }
    }
  };
  // An op whose first computation lies in T_j: after c_j, and before c_{j+1} or c_{j+1} itself.
  auto in_interval = [&](size_t j, OpId o) {
    return sides[j].after[U(o)] && (j + 1 == m || o == cuts[j + 1] || sides[j + 1].before[U(o)]);
  };
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const Tensor& tensor = graph.tensors[t];
    if (tensor.producer == kNoOp) continue;
    const auto id = static_cast<TensorId>(t);
    for (size_t j = 0; j < m; ++j) {
      const CutSide& side = sides[j];
      // Read after the cut, or written after it (the write needs a computation of its storage).
      bool needed_after = side.after[U(tensor.producer)];
      bool needed_within = in_interval(j, tensor.producer);
      for (OpId c : tensor.consumers) {
        if (side.after[U(c)]) needed_after = true;
        if (in_interval(j, c)) needed_within = true;
        if (side.before[U(tensor.producer)] && side.before[U(c)] && redo[j][U(c)] >= 0)
          require(j, id, redo[j][U(c)], true);
      }
      if (needed_after) require(j, id, -1, needed_within);
    }
  }
  // Live at c_{j+1} and made before c_j: live at c_j too, or allocated again in T_j.
  for (size_t j = 0; j + 1 < m; ++j)
    for (StorageId s : model.planned) {
      if (keep[j][U(s)] < 0 || keep[j + 1][U(s)] < 0) continue;
      std::vector<std::pair<int, double>> row = {{keep[j + 1][U(s)], 1.0}, {keep[j][U(s)], -1.0}};
      const OpId p = root_producer(s);
      if (redo[j][U(p)] >= 0) row.emplace_back(redo[j][U(p)], -1.0);
      problem.AddRow(row, -kInf, 0.0);
    }

  if (work.chain_max_columns > 0 && m > 1 && problem.num_columns() > work.chain_max_columns) {
    out.solver = "skipped: more columns than overhead_bound.chain_max_columns";
    return out;
  }
  // The LP relaxation (kind continuous) is bounded by what its duals prove (ilp/proven_bound.h,
  // one node), not by GLPK's objective. The MILP's bound is still GLPK's branch and cut's, on the
  // scaled rows above: roam's own branch and bound, whose every node is proven, lacks GLPK's cuts
  // and proved 9 of the 16 optimal Checkmate cells with as many nodes, 14 with four times as
  // many at up to 15 times the time (perf/RESULTS.md, "A branch and bound whose bounds are
  // proven").
  if (kind == ilp::ColumnKind::kContinuous) {
    ilp::ProvenBoundParams bp;
    bp.max_lp_iterations = work.max_lp_iterations;
    bp.time_limit_s = time_limit_s;
    const ilp::ProvenBound proven = ilp::ProveLowerBound(problem, bp);
    out.solver = proven.message;
    out.infeasible = proven.infeasible;
    if (!out.infeasible && std::isfinite(proven.bound)) out.percent = std::max(0.0, proven.bound);
    return out;
  }
  ilp::SolveParams sp;
  sp.time_limit_s = time_limit_s;
  sp.max_lp_iterations = work.max_lp_iterations;
  sp.max_nodes = work.max_nodes;
  const ilp::SolveResult r = problem.Solve(sp);
  out.solver = std::string(ilp::ToString(r.status));
  if (r.status == ilp::ModelStatus::kInfeasible) {
    out.infeasible = true;
  } else if (r.status == ilp::ModelStatus::kOptimal) {
    out.percent = r.objective;
  } else if (r.status != ilp::ModelStatus::kError && std::isfinite(r.best_bound)) {
    out.percent = r.best_bound;
  }
  out.percent = std::max(0.0, out.percent);
  // The witness: the ops the best solution computes again after the first cut.
  if (r.has_solution && kind == ilp::ColumnKind::kBinary)
    for (OpId o = 0; o < graph.num_ops(); ++o) {
      bool again = false;
      for (size_t j = 0; j < m; ++j)
        again = again || (redo[j][U(o)] >= 0 && r.values[U(redo[j][U(o)])] > 0.5);
      if (again) out.redone.push_back(o);
    }
  return out;
}

std::vector<OpId> ChooseChain(const Dependencies& deps, std::span<const OpId> candidates, int most,
                              int pool) {
  if (most < 2 || candidates.empty()) return {};
  // The pool: candidates comparable with every one taken before, most forced first.
  std::vector<OpId> chain;
  std::vector<char> comparable(deps.pred_begin.size() - 1, 1);
  for (OpId c : candidates) {
    if (static_cast<int>(chain.size()) >= std::max(most, pool)) break;
    if (!comparable[U(c)]) continue;
    const std::vector<char> up = ReachableOps(deps, c, /*forward=*/false);
    const std::vector<char> down = ReachableOps(deps, c, /*forward=*/true);
    for (size_t o = 0; o < comparable.size(); ++o)
      comparable[o] = static_cast<char>(comparable[o] && (up[o] || down[o]));
    chain.push_back(c);
  }
  // Ancestors first: on a chain, an op's ancestors among the cuts are exactly those before it.
  std::vector<std::pair<int, OpId>> ranked;
  for (OpId a : chain) {
    const std::vector<char> up = ReachableOps(deps, a, /*forward=*/false);
    int ancestors = 0;
    for (OpId b : chain) ancestors += b != a && up[U(b)];
    ranked.emplace_back(ancestors, a);
  }
  std::sort(ranked.begin(), ranked.end());
  // Spread over the pool, the most forced op among them: the most forced ops sit next to each
  // other (the turn), and cuts a step apart add little that one cut does not see.
  const size_t n = ranked.size(), k = std::min(n, static_cast<size_t>(most));
  if (k < 2) return {};
  size_t top = 0;
  while (ranked[top].second != chain.front()) ++top;
  std::vector<size_t> picks;
  for (size_t i = 0; i < k; ++i) picks.push_back(i * (n - 1) / (k - 1));
  auto nearest = std::min_element(picks.begin(), picks.end(), [&](size_t a, size_t b) {
    return (a > top ? a - top : top - a) < (b > top ? b - top : top - b);
  });
  *nearest = top;
  std::sort(picks.begin(), picks.end());
  picks.erase(std::unique(picks.begin(), picks.end()), picks.end());
  std::vector<OpId> cuts;
  for (size_t i : picks) cuts.push_back(ranked[i].second);
  return cuts;
}

}  // namespace roam::remat::detail
