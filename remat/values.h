// The graph as values on a base order, one per op (MOCCASIN's nodes): what the exact method
// (exact.cpp) and the lookahead (lookahead.cpp) plan over. Internal to the remat stage.
#pragma once

#include <string_view>
#include <vector>

#include "remat/remat.h"

namespace roam::remat::detail {

// An aten name PyTorch reserves for in-place writes (ends in '_', not a dunder).

// The graph seen as values, one per op, at the positions of the base order.
struct Values {
  int n = 0;
  std::vector<OpId> op;                // per position
  std::vector<double> keep, all;       // bytes held after the computation / made by it
  std::vector<double> cost;            // OpCost
  std::vector<std::vector<int>> deps;  // positions whose values the computation needs
  std::vector<std::vector<int>> users;
  std::vector<char> output, recomputable;
  bool exact = true;         // no recomputable op was excluded for aliasing or for several outputs
  std::vector<int> horizon;  // last stage the value may be read in
  std::vector<int> last_recompute;  // last stage a recomputation may sit in (< own: never)
  // First position after the op's own of an in-place write to a storage it reads (n: none);
  // a recomputation must come before it.
  std::vector<int> write_limit;
  // With view_chains: per position, the positions of the views of the storage it makes. Its
  // recomputation makes a fresh storage, so each of those views must be made again before a
  // reader reads it through that view.
  std::vector<std::vector<int>> views;
};

// The values of graph on the base order. An op's bytes are its planned root storages
// (aligned); persistent tensors count 0. A view or an in-place write shares a storage, so the
// readers of a view also depend on the producer of its storage. Ops that make or are aliased
// by views or in-place writes, graph-output producers, non-recomputable ops and ops with
// nothing planned are not recomputable here. With view_chains, an op whose storage is aliased
// only by views (ops whose every output aliases an input, none an in-place write, each
// recomputable) is recomputable too, its views listed in Values::views; the views are not.
Values BuildValues(const Graph& graph, const Schedule& base, const RematParams& params,
                   bool view_chains = false);

}  // namespace roam::remat::detail
