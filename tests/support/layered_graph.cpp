#include "tests/support/layered_graph.h"

#include <algorithm>
#include <random>
#include <stdexcept>

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

Graph SmallLayered(unsigned seed) {
  return RandomLayered({.nodes = 16,
                        .width = 4,
                        .back_layers = 3,
                        .max_inputs = 3,
                        .min_size = 1,
                        .max_size = 10,
                        .min_cost = 1,
                        .max_cost = 10},
                       seed);
}

Graph InRandomOrder(const Graph& g, unsigned seed) {
  const int n = g.num_ops();
  if (g.tensors.size() != U(n))
    throw std::invalid_argument("InRandomOrder: one tensor per op only");
  std::vector<int> waiting(U(n), 0);
  for (size_t i = 0; i < g.tensors.size(); ++i) {
    const Tensor& t = g.tensors[i];
    if (U(t.producer) != i || t.alias_of != kNoTensor)
      throw std::invalid_argument("InRandomOrder: tensor i must be op i's output, not a view");
    for (OpId c : t.consumers) ++waiting[U(c)];
  }
  std::mt19937_64 rng(seed);
  std::vector<OpId> ready, order;
  for (OpId v = 0; v < n; ++v)
    if (waiting[U(v)] == 0) ready.push_back(v);
  while (!ready.empty()) {
    const size_t k = rng() % ready.size();
    const OpId v = ready[k];
    ready[k] = ready.back();
    ready.pop_back();
    order.push_back(v);
    for (OpId c : g.tensors[U(v)].consumers)
      if (--waiting[U(c)] == 0) ready.push_back(c);
  }
  std::vector<OpId> position(U(n));
  for (int i = 0; i < n; ++i) position[U(order[U(i)])] = i;
  Graph h;
  h.name = g.name;
  h.op_costs.resize(U(n));
  for (int i = 0; i < n; ++i) {
    const OpId v = order[U(i)];
    const Tensor& old = g.tensors[U(v)];
    h.ops.push_back(Op{i, g.ops[U(v)].name, g.ops[U(v)].phase, {}, {}});
    h.op_costs[U(i)] = g.op_costs[U(v)];
    Tensor t;
    t.ext_id = i;
    t.size = old.size;
    t.producer = i;
    t.output = old.output;
    for (OpId c : old.consumers) t.consumers.push_back(position[U(c)]);
    h.tensors.push_back(t);
  }
  Finalize(h, h.name);
  return h;
}

}  // namespace roam::testing
