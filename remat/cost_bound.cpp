// The compute lower bound (remat.h OverheadLowerBound, docs/remat.md "Compute lower bound").
//
// Why one step suffices: the original computation of a cut op L comes after all of its
// ancestors and before all of its descendants in every schedule, whatever is recomputed. A
// planned storage that an ancestor of L made and a descendant of L reads is therefore, at L's
// step, either live (the original or a copy made before L and kept) or made again after L by
// copies of its writers; and a copy after L reads each of its inputs the same way. Whatever a
// schedule does, its choices at L satisfy these implications, so the cheapest set of copies
// that satisfies them with the live bytes within the budget costs no more than any schedule's
// recomputation. Working memory after L, the order of copies and repeated copies are left out,
// which is why it is a bound and not a plan.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <vector>

#include "core/deadline.h"
#include "core/lower_bound.h"
#include "core/memory_model.h"
#include "core/types.h"
#include "ilp/glpk.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"
#include "remat/remat.h"

namespace roam::remat {
namespace {

struct CutBound {
  double percent = 0;  // proven lower bound on the recompute cost, percent of the total
  bool infeasible = false;
  std::string solver;
  std::vector<OpId> redone;  // the best solution's ops computed after the cut (binary pass)
};

CutBound BoundAtCut(const Graph& graph, const MemoryModel& model, const Dependencies& deps,
                    const std::vector<char>& recomputable, const std::vector<double>& percent,
                    OpId cut, Bytes budget, ilp::ColumnKind kind, const OverheadBoundParams& work,
                    double time_limit_s) {
  // Strictly before and after: the cut itself is neither.
  std::vector<char> before = ReachableOps(deps, cut, /*forward=*/false);
  std::vector<char> after = ReachableOps(deps, cut, /*forward=*/true);
  before[U(cut)] = after[U(cut)] = 0;
  auto root_producer = [&](StorageId s) {
    return graph.tensors[U(model.storages[U(s)].root)].producer;
  };
  // Storages live at the cut in every schedule: what the cut op touches, and outputs (held to
  // the end) made before it.
  std::vector<char> fixed(model.storages.size(), 0);
  Bytes fixed_bytes = 0;
  for (StorageId s : model.Touches(cut)) fixed[U(s)] = 1;
  for (StorageId s : model.planned) {
    const OpId p = root_producer(s);
    if (model.storages[U(s)].output && p != kNoOp && before[U(p)]) fixed[U(s)] = 1;
  }
  for (size_t s = 0; s < fixed.size(); ++s)
    if (fixed[s]) fixed_bytes += model.storages[s].size;
  CutBound out;
  if (fixed_bytes > budget) {
    out.infeasible = true;
    out.solver = "no schedule fits at the cut: its forced storages exceed the budget";
    return out;
  }

  ilp::Problem problem;
  std::vector<int> keep(model.storages.size(), -1);  // column: the storage is live at the cut
  std::vector<int> redo(U(graph.num_ops()), -1);     // column: the op is computed after the cut
  std::vector<std::pair<int, double>> memory;
  for (StorageId s : model.planned) {
    const OpId p = root_producer(s);
    if (fixed[U(s)] || p == kNoOp || !before[U(p)]) continue;
    const double size = static_cast<double>(model.storages[U(s)].size);
    keep[U(s)] = problem.AddColumn(kind, 0, 1);
    memory.emplace_back(keep[U(s)], size);
  }
  for (OpId o = 0; o < graph.num_ops(); ++o)
    if (before[U(o)] && recomputable[U(o)])
      redo[U(o)] = problem.AddColumn(kind, 0, 1, percent[U(o)]);
  problem.AddRow(memory, -std::numeric_limits<double>::infinity(),
                 static_cast<double>(budget - fixed_bytes));

  // needer is the cut itself (-1: a read after the cut) or a copy's column: the storage of t
  // must then be live at the cut, or made again after it by copies of writers, those on t's
  // alias chain back to the root when all lie before the cut (t's value is theirs), else at
  // least the root's producer (a copy of s is made by nothing else).
  auto require = [&](TensorId t, int needer) {
    const StorageId s = model.storage_of[U(t)];
    if (keep[U(s)] < 0) return;  // fixed, persistent or not made before the cut
    std::vector<OpId> writers = {root_producer(s)};
    if (before[U(graph.tensors[U(t)].producer)])
      for (TensorId m = t; m != kNoTensor; m = graph.tensors[U(m)].alias_of)
        writers.push_back(graph.tensors[U(m)].producer);
    for (OpId w : writers) {
      if (w == kNoOp) continue;  // not a writer: nothing to recompute
      std::vector<std::pair<int, double>> row = {{keep[U(s)], 1.0}};
      if (redo[U(w)] >= 0) row.emplace_back(redo[U(w)], 1.0);
      if (needer < 0) {
        problem.AddRow(row, 1.0, std::numeric_limits<double>::infinity());
      } else {
        row.emplace_back(needer, -1.0);
        problem.AddRow(row, 0.0, std::numeric_limits<double>::infinity());
      }
    }
  };
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const Tensor& tensor = graph.tensors[t];
    if (tensor.producer == kNoOp) continue;
    const auto id = static_cast<TensorId>(t);
    // Read after the cut, or written after it (the write needs a computation of its storage).
    bool needed_after = after[U(tensor.producer)];
    for (OpId c : tensor.consumers) {
      if (after[U(c)]) needed_after = true;
      if (before[U(tensor.producer)] && before[U(c)] && redo[U(c)] >= 0) require(id, redo[U(c)]);
    }
    if (needed_after) require(id, -1);
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
  if (r.has_solution && kind == ilp::ColumnKind::kBinary)
    for (OpId o = 0; o < graph.num_ops(); ++o)
      if (redo[U(o)] >= 0 && r.values[U(redo[U(o)])] > 0.5) out.redone.push_back(o);
  return out;
}
}  // namespace

OverheadBound OverheadLowerBound(const Graph& graph, Bytes budget, const RematParams& params) {
  OverheadBound out;
  const double total = TotalCost(graph);
  if (graph.num_ops() == 0 || total <= 0 || params.overhead_bound.cuts <= 0) return out;
  const MemoryModel model = BuildMemoryModel(graph, params.alignment);
  const Dependencies deps = BuildDependencies(graph);
  // Every op that may force more than the budget is evaluated: those are the possible cuts.
  ForcedParams forced_params;
  forced_params.evaluate_above = budget;
  const ForcedResidency forced = CertifiedLowerBound(graph, model, deps, forced_params);
  // Only where the storages forced live exceed the budget must anything be recomputed; the
  // most forced steps bound best (on ResNet-50 the turn from forward to backward).
  std::vector<OpId> cuts;
  for (OpId o = 0; o < graph.num_ops(); ++o)
    if (forced.per_op[U(o)] > budget) cuts.push_back(o);
  std::stable_sort(cuts.begin(), cuts.end(),
                   [&](OpId a, OpId b) { return forced.per_op[U(a)] > forced.per_op[U(b)]; });
  if (cuts.size() > U(params.overhead_bound.cuts)) cuts.resize(U(params.overhead_bound.cuts));
  const std::vector<char> recomputable = detail::MakeOpFlags(graph, params).recomputable;
  // In percent of the total: GLPK's tolerances then sit well below what is reported.
  std::vector<double> percent = detail::OpCosts(graph);
  for (double& c : percent) c *= 100 / total;
  // Every cut's LP relaxation first (fast, and a bound already), then the MILP of the best
  // cut with the time left: its branch and bound is where the time pays (ResNet-50 at one
  // third: 14.79% from the LP, 15.02% after half a second of branching).
  const auto started = std::chrono::steady_clock::now();
  auto time_left = [&] {
    const double spent = SecondsSince(started);
    return std::max(0.0, params.overhead_bound.time_limit_s - spent);
  };
  auto take = [&](const CutBound& b, OpId cut) {
    // GLPK's bound carries its tolerances; shaved so that a tight bound stays below the cost.
    const double overhead = b.percent / 100 * (1 - 1e-6);
    if (out.cut == kNoOp || overhead > out.overhead) {
      out.overhead = overhead;
      out.cut = cut;
    }
  };
  for (size_t i = 0; i < cuts.size() && cuts.size() > 1; ++i) {
    const CutBound b = BoundAtCut(graph, model, deps, recomputable, percent, cuts[i], budget,
                                  ilp::ColumnKind::kContinuous, params.overhead_bound,
                                  time_left() / static_cast<double>(cuts.size() - i + 1));
    if (b.infeasible) {  // the relaxation has no solution, so neither has any schedule
      out.infeasible = true;
      out.cut = cuts[i];
      out.overhead = 0;
      return out;
    }
    take(b, cuts[i]);
  }
  if (!cuts.empty()) {
    const OpId best = out.cut == kNoOp ? cuts.front() : out.cut;
    const CutBound b = BoundAtCut(graph, model, deps, recomputable, percent, best, budget,
                                  ilp::ColumnKind::kBinary, params.overhead_bound, time_left());
    if (b.infeasible) {
      out.infeasible = true;
      out.overhead = 0;
      return out;
    }
    take(b, best);
    if (out.cut == best) out.redone = b.redone;
  }
  return out;
}

}  // namespace roam::remat
