// Lower bounds of remat (docs/remat.md, "Peak lower bound", "The compute lower bound"): the
// peak no schedule goes below, and the compute overhead no schedule within a budget goes below.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/types.h"
#include "remat/params.h"

namespace roam::remat {

// A peak no remat schedule of graph reaches below, whatever it recomputes and in whatever
// order: every op is computed at least once, and at that step the planned storages it touches
// are live, and so is every graph output one of its ancestors made (held to the end, never
// recomputed). PeakLowerBounds gives it per op (the op's first step); PeakLowerBound is their
// maximum. A budget below it is out of reach (status "infeasible-proven").
std::vector<Bytes> PeakLowerBounds(const Graph& graph, Bytes alignment);
Bytes PeakLowerBound(const Graph& graph, const RematParams& params = {});

// A lower bound on the compute overhead of every schedule of graph whose theoretical peak
// fits budget, whatever it recomputes and in whatever order (docs/remat.md, "Compute lower
// bound"): at the step of a cut op, each storage made before the cut and read after it is
// either live or made again after the cut by copies of its writers, and each such copy reads
// its inputs the same way; the cheapest such choice with the live bytes within the budget is
// a MILP (GLPK), whose proven bound is taken (the cuts: the params.overhead_bound.cuts ops
// with the most bytes forced live, core/lower_bound.h, beyond the budget); and the same at
// up to params.overhead_bound.chain_cuts cuts on one chain of the DAG in one MILP, copies
// counted once per interval between cuts and added up, where that proves more.
struct OverheadBound {
  double overhead = 0;      // fraction of the original total cost; 0 when nothing is proven
  bool infeasible = false;  // proven: no schedule fits the budget at cut
  OpId cut = kNoOp;         // the cut the bound (or the proof) comes from
  // The best solution the MILP found at cut (a witness, not a schedule): the ops it computes
  // again after the cut, ascending. Empty when none was found or none is needed.
  std::vector<OpId> redone;
  // The single cut's bound alone, and the chain of cuts whose MILP proved more (empty when
  // none did; docs/remat.md, "Several cuts on a chain").
  double single_cut = 0;
  std::vector<OpId> chain;
};
OverheadBound OverheadLowerBound(const Graph& graph, Bytes budget, const RematParams& params = {});

// A lower bound on the compute overhead of every schedule of graph whose original computations
// follow `order` (each later listing a copy) and whose theoretical peak fits budget: MOCCASIN's
// and Checkmate's problem, the input order kept (docs/remat.md, "The in-order lower bound").
// At each step where the order's live bytes exceed the budget, storages not touched there free
// the excess, and each storage evicted in a gap between two of its touches costs a computation
// of its producer in that gap; the cheapest such cover is bounded by a branch and bound whose
// every node's bound is proven from its LP's duals by weak duality (ilp/proven_bound.h), within
// the work of params.order_bound; it stops once it proves `enough` (a fraction, e.g. a plan's
// overhead). It says nothing about other orders.
struct OrderBound {
  double overhead = 0;      // fraction of the original total cost; 0 when nothing is proven
  bool infeasible = false;  // proven: no schedule keeping the order fits the budget
  std::string solver;       // how its search ended ("" where the order fits as it is)
  // Its MILP's nonzeros (the needs' and the cover rows'); past order_bound.max_nonzeros the
  // model is abandoned as soon as it counts more, and this is the count at that point.
  std::int64_t nonzeros = 0;
};
OrderBound InOrderLowerBound(const Graph& graph, std::span<const OpId> order, Bytes budget,
                             const RematParams& params, double time_limit_s,
                             double enough = std::numeric_limits<double>::infinity());

}  // namespace roam::remat
