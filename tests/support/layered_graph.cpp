#include "tests/support/layered_graph.h"

#include <algorithm>
#include <random>

#include "core/types.h"

namespace roam::testing {
Graph RandomLayered(const LayeredGraphOptions& o, unsigned seed) {
  std::mt19937_64 rng(seed);
  auto uni = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Graph g;
  g.name = "random-layered-" + std::to_string(o.nodes);
  g.op_costs.resize(U(o.nodes));
  for (int v = 0; v < o.nodes; ++v) {
    g.ops.push_back(Op{v, o.op_name, Phase::kUnknown, {}, {}});
    g.op_costs[U(v)] = uni(o.min_cost, o.max_cost);
    Tensor t;
    t.ext_id = v;
    t.size = std::uniform_int_distribution<Bytes>(o.min_size, o.max_size)(rng);
    t.producer = v;
    g.tensors.push_back(t);
    if (v == 0) continue;
    const int layer = v / o.width;
    const int inputs = uni(1, o.max_inputs);
    for (int i = 0; i < inputs; ++i) {
      int lo = std::max(0, (layer - (i == 0 ? 1 : o.back_layers)) * o.width);
      int hi = std::max(0, layer * o.width - 1);
      if (layer == 0) hi = v - 1;
      const int u = uni(std::min(lo, v - 1), std::min(hi, v - 1));
      auto& c = g.tensors[U(u)].consumers;
      if (std::find(c.begin(), c.end(), v) == c.end()) c.push_back(v);
    }
  }
  if (o.last_is_output) g.tensors.back().output = true;
  Finalize(g, g.name);
  return g;
}

}  // namespace roam::testing
