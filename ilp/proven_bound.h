// A lower bound on a MILP's optimum that GLPK's numerics cannot overstate (docs/ilp.md,
// "Bounds GLPK cannot overstate").
//
// In: an ilp::Problem (minimised) and the work allowed. Out: a bound that no feasible point's
// objective goes below, the best integer point met on the way (checked against every row), and
// whether the search was complete.
//
// Why not Problem::Solve's best bound: GLPK's branch and cut prunes with the objectives its
// simplex reports, and on a badly scaled covering LP (GPT-2 XL's eviction rows, sizes of 10^8
// against excesses of 10^9) the simplex called a point optimal above a real integer point, so
// its "bound" cut that point off. Here GLPK only suggests: a branch and bound of roam's own
// splits the integer columns' ranges, every node's LP is solved by GLPK's dual simplex from the
// last basis, and the node's bound is recomputed by roam from the LP's row duals by weak
// duality (Problem::DualBound within the node's column bounds), valid for any duals at all.
// The nodes' ranges partition the integer points, so the least bound over the leaves bounds
// them all, whichever leaves were pruned, by what, and whether a pruning incumbent was
// feasible. A node whose LP GLPK calls infeasible is solved again with every row made elastic
// (a slack at a cost above every feasible objective): those duals prove the node empty when
// their bound exceeds every feasible objective, and bound it otherwise.
#pragma once

#include <atomic>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ilp/glpk.h"

namespace roam::ilp {

struct ProvenBoundParams {
  // LPs solved, the root's included: 1 is the LP relaxation alone. Bounded by work, the bound
  // is the same on any machine; time_limit_s is only an outer cap.
  std::int64_t max_nodes = 1;
  std::int64_t max_lp_iterations = 0;  // simplex iterations over all nodes (0: no limit)
  double time_limit_s = 10.0;
  // Nothing above this is wanted (e.g. the cost of a plan in hand): nodes bounded at or above
  // it are not split, and the search ends once the bound reaches it.
  double enough = std::numeric_limits<double>::infinity();
  const std::atomic<bool>* stop = nullptr;  // set by another thread: end as at the time limit
  // Per column (or empty): the integer columns to branch on while any of them is fractional,
  // before the others. Where some columns decide the rest (the in-order bound's copy counts
  // decide its evictions), branching on them first closes the search in fewer nodes.
  std::vector<char> branch_first;
};

struct ProvenBound {
  double bound = -std::numeric_limits<double>::infinity();  // no feasible point is below it
  bool infeasible = false;  // proven: no feasible point (bound is +infinity)
  // The best integer point met (rounded LP optima, checked by Problem::CheckFeasible).
  bool has_solution = false;
  std::vector<double> values;
  double objective = std::numeric_limits<double>::infinity();
  bool complete = false;  // every leaf closed: the bound is the optimum, or infeasibility
  std::int64_t nodes = 0;
  std::int64_t lp_iterations = 0;
  std::string message;  // how it ended, in words
};

ProvenBound ProveLowerBound(const Problem& problem, const ProvenBoundParams& params);

}  // namespace roam::ilp
