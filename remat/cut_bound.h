// The compute lower bound's MILPs (remat/cost_bound.cpp at one cut, remat/chain_bound.cpp at
// a chain of cuts together), shared by OverheadLowerBound (remat/bound.h).
#pragma once

#include <span>
#include <string>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"
#include "core/types.h"
#include "ilp/glpk.h"
#include "remat/params.h"

namespace roam::remat::detail {

// What every cut's MILP reads, built once per bound.
struct BoundInputs {
  const Graph& graph;
  const MemoryModel& model;
  const Dependencies& deps;
  const std::vector<char>& recomputable;
  const std::vector<double>& percent;  // per op, its cost in percent of the graph's total
};

struct CutBound {
  double percent = 0;  // proven lower bound on the recompute cost, percent of the total
  bool infeasible = false;
  std::string solver;
  std::vector<OpId> redone;  // the best solution's ops computed after the cut (binary pass)
};

// The bound at the chain cuts[0] < cuts[1] < ... (each an ancestor of the next), recompute
// counted once per interval between consecutive cuts and added up (chain_bound.cpp's header
// argues why that holds). One cut gives the single-cut bound's model.
CutBound BoundAtChain(const BoundInputs& in, std::span<const OpId> cuts, Bytes budget,
                      ilp::ColumnKind kind, const OverheadBoundParams& work, double time_limit_s);

// Up to `most` of `candidates` (most forced first) that lie on one chain of the DAG, the first
// candidate always among them, spread evenly over the first `pool` candidates that lie on
// that chain, in topological order (ancestors first). Empty when fewer than two.
std::vector<OpId> ChooseChain(const Dependencies& deps, std::span<const OpId> candidates, int most,
                              int pool);

}  // namespace roam::remat::detail
