// A peak no remat schedule can go below (remat.h PeakLowerBound, docs/remat.md "Peak lower
// bound"), so that a budget under it is reported as proven out of reach.
#include <algorithm>

#include "core/memory_model.h"
#include "core/types.h"
#include "remat/remat.h"

namespace roam::remat {
std::vector<Bytes> PeakLowerBounds(const Graph& graph, Bytes alignment) {
  const MemoryModel model = BuildMemoryModel(graph, alignment);
  const int n = graph.num_ops();
  // Every op is computed at least once (its first listing in any schedule), and at that step
  // every planned storage it touches is live; a copy touches storages of the same sizes.
  std::vector<Bytes> bound(U(n), 0);
  for (OpId o = 0; o < n; ++o)
    for (StorageId s : model.Touches(o)) bound[U(o)] += model.storages[U(s)].size;
  // A graph output is live from its root's producer p to the end, and never recomputed (its
  // producer is not recomputable: copies are never graph outputs), so at the first step of
  // every descendant of p that does not touch it already it adds its bytes.
  std::vector<int> seen(U(n), -1);
  std::vector<OpId> stack;
  for (size_t s = 0; s < model.storages.size(); ++s) {
    const Storage& st = model.storages[s];
    if (!st.planned() || !st.output) continue;
    const OpId p = graph.tensors[U(st.root)].producer;
    if (p == kNoOp) continue;
    stack.assign(1, p);
    seen[U(p)] = static_cast<int>(s);
    while (!stack.empty()) {
      const OpId o = stack.back();
      stack.pop_back();
      for (TensorId t : graph.ops[U(o)].outputs)
        for (OpId c : graph.tensors[U(t)].consumers) {
          if (seen[U(c)] == static_cast<int>(s)) continue;
          seen[U(c)] = static_cast<int>(s);
          stack.push_back(c);
          const auto touches = model.Touches(c);
          if (std::find(touches.begin(), touches.end(), static_cast<StorageId>(s)) == touches.end())
            bound[U(c)] += st.size;
        }
    }
  }
  return bound;
}

Bytes PeakLowerBound(const Graph& graph, const RematParams& params) {
  const std::vector<Bytes> bounds = PeakLowerBounds(graph, params.alignment);
  return bounds.empty() ? 0 : *std::max_element(bounds.begin(), bounds.end());
}

}  // namespace roam::remat
