#include "tests/support/random_graph.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>

#include "core/types.h"

namespace roam::testing {
Graph RandomGraph(std::mt19937_64& rng, const RandomGraphOptions& options) {
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto pick = [&](int n) {
    return static_cast<int>(std::uniform_int_distribution<int>(0, n - 1)(rng));
  };
  Graph graph;
  graph.name = "random";
  auto new_tensor = [&](Bytes size, OpId producer) {
    Tensor t;
    t.size = size;
    t.producer = producer;
    graph.tensors.push_back(t);
    return static_cast<TensorId>(graph.tensors.size() - 1);
  };
  for (int i = 0; i < options.graph_inputs; ++i) {
    TensorId t = new_tensor(1 + pick(static_cast<int>(options.max_size)), kNoOp);
    graph.tensors[U(t)].kind = TensorKind::kWeight;
  }
  for (OpId op = 0; op < options.ops; ++op) {
    graph.ops.push_back(Op{0, "op" + std::to_string(op), Phase::kUnknown, {}, {}});
    std::vector<TensorId> inputs;
    int available = static_cast<int>(graph.tensors.size());
    int count = available == 0 ? 0 : 1 + pick(options.max_inputs);
    for (int k = 0; k < count; ++k) {
      // Prefer recent tensors, like a real network's chains, but reach back sometimes.
      int back = std::min(available, 4);
      TensorId t = chance(0.7) ? available - 1 - pick(back) : pick(available);
      if (graph.tensors[U(t)].producer == op) continue;
      if (std::find(inputs.begin(), inputs.end(), t) == inputs.end()) inputs.push_back(t);
    }
    for (TensorId t : inputs) graph.tensors[U(t)].consumers.push_back(op);
    int outputs = chance(options.second_output_prob) ? 2 : 1;
    for (int k = 0; k < outputs; ++k) {
      Bytes size = chance(options.zero_prob) ? 0 : 1 + pick(static_cast<int>(options.max_size));
      TensorId t = new_tensor(size, op);
      if (!inputs.empty() && chance(options.alias_prob))
        graph.tensors[U(t)].alias_of = inputs[U(pick(static_cast<int>(inputs.size())))];
      graph.tensors[U(t)].output = chance(options.output_prob);
    }
  }
  // Shuffle external ids so that they are sparse and unrelated to creation order.
  std::vector<ExternalId> op_ids(U(options.ops)), tensor_ids(graph.tensors.size());
  std::iota(op_ids.begin(), op_ids.end(), 0);
  std::iota(tensor_ids.begin(), tensor_ids.end(), 0);
  std::shuffle(op_ids.begin(), op_ids.end(), rng);
  std::shuffle(tensor_ids.begin(), tensor_ids.end(), rng);
  for (size_t i = 0; i < op_ids.size(); ++i) graph.ops[i].ext_id = op_ids[i] * 3 + 100;
  for (size_t i = 0; i < tensor_ids.size(); ++i) graph.tensors[i].ext_id = tensor_ids[i] * 2 + 1;
  graph.program_order.resize(U(options.ops));
  std::iota(graph.program_order.begin(), graph.program_order.end(), 0);
  Finalize(graph, "random");
  return graph;
}

void ForEachTopologicalOrder(const Graph& graph,
                             const std::function<void(const std::vector<OpId>&)>& visit) {
  Dependencies deps = BuildDependencies(graph);
  const int n = graph.num_ops();
  std::vector<int> missing(U(n));
  for (OpId op = 0; op < n; ++op) missing[U(op)] = static_cast<int>(deps.Preds(op).size());
  std::vector<OpId> order;
  std::vector<char> done(U(n), 0);
  std::function<void()> extend = [&] {
    if (static_cast<int>(order.size()) == n) {
      visit(order);
      return;
    }
    for (OpId op = 0; op < n; ++op) {
      if (done[U(op)] || missing[U(op)] != 0) continue;
      done[U(op)] = 1;
      order.push_back(op);
      for (OpId s : deps.Succs(op)) --missing[U(s)];
      extend();
      for (OpId s : deps.Succs(op)) ++missing[U(s)];
      order.pop_back();
      done[U(op)] = 0;
    }
  };
  extend();
}

Bytes BruteForceMinPeak(const Graph& graph, const MemoryModel& model,
                        std::vector<OpId>* best_order) {
  Bytes best = std::numeric_limits<Bytes>::max();
  ForEachTopologicalOrder(graph, [&](const std::vector<OpId>& order) {
    Bytes peak = TheoreticalPeak(graph, model, order);
    if (peak < best) {
      best = peak;
      if (best_order != nullptr) *best_order = order;
    }
  });
  return best;
}

}  // namespace roam::testing
