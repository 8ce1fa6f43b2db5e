// Test support: random training-like DAGs and brute-force oracles for tiny graphs.
#pragma once

#include <functional>
#include <random>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"

namespace roam::testing {

struct RandomGraphOptions {
  int ops = 8;
  int graph_inputs = 2;      // persistent tensors (weights) some ops read
  int max_inputs = 3;        // tensors an op consumes, at most
  double alias_prob = 0.2;   // an output is a view / in-place result of an input
  double zero_prob = 0.15;   // an output is a size-0 ordering tensor
  double output_prob = 0.1;  // a produced tensor must stay resident to the end
  double second_output_prob = 0.3;
  Bytes max_size = 5000;
};

// Ops are created in a topological order; ids are shuffled so they are neither dense nor in
// order, and program_order is the creation order.
Graph RandomGraph(std::mt19937_64& rng, const RandomGraphOptions& options = {});

// Calls visit(order) for every topological order of the graph (use on tiny graphs only).
void ForEachTopologicalOrder(const Graph& graph,
                             const std::function<void(const std::vector<OpId>&)>& visit);

// The minimum theoretical peak over all topological orders, by enumeration.
Bytes BruteForceMinPeak(const Graph& graph, const MemoryModel& model,
                        std::vector<OpId>* best_order = nullptr);

}  // namespace roam::testing
