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
//
// Then the same at a chain of cuts in one MILP (chain_bound.cpp, which builds both models), and
// the higher of the two proven bounds is reported: each holds for every schedule.
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
#include "remat/cut_bound.h"
#include "remat/greedy_state.h"
#include "remat/internal.h"
#include "remat/remat.h"

namespace roam::remat {

using detail::BoundAtChain;
using detail::CutBound;

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
  const std::vector<OpId> candidates = cuts;
  if (cuts.size() > U(params.overhead_bound.cuts)) cuts.resize(U(params.overhead_bound.cuts));
  const std::vector<char> recomputable = detail::MakeOpFlags(graph, params).recomputable;
  // In percent of the total: GLPK's tolerances then sit well below what is reported.
  std::vector<double> percent = detail::OpCosts(graph);
  for (double& c : percent) c *= 100 / total;
  const detail::BoundInputs in{graph, model, deps, recomputable, percent};
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
    const CutBound b =
        BoundAtChain(in, {&cuts[i], 1}, budget, ilp::ColumnKind::kContinuous, params.overhead_bound,
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
    const CutBound b = BoundAtChain(in, {&best, 1}, budget, ilp::ColumnKind::kBinary,
                                    params.overhead_bound, time_left());
    if (b.infeasible) {
      out.infeasible = true;
      out.overhead = 0;
      return out;
    }
    take(b, best);
    if (out.cut == best) out.redone = b.redone;
    out.single_cut = out.overhead;
  }
  // The chain through the most forced op, its MILP with the work and time left; the single
  // cut's bound stays where the chain's (out of work) is lower.
  const std::vector<OpId> chain = detail::ChooseChain(
      deps, candidates, params.overhead_bound.chain_cuts, params.overhead_bound.chain_pool);
  if (chain.size() >= 2) {
    OverheadBoundParams work = params.overhead_bound;
    work.max_nodes = work.chain_max_nodes;
    const CutBound b = BoundAtChain(in, chain, budget, ilp::ColumnKind::kBinary, work, time_left());
    if (b.infeasible) {
      out.infeasible = true;
      out.overhead = 0;
      return out;
    }
    const double overhead = b.percent / 100 * (1 - 1e-6);
    if (overhead > out.overhead) {
      out.overhead = overhead;
      out.chain = chain;
    }
  }
  return out;
}

}  // namespace roam::remat
