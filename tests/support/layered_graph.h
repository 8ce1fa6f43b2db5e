// Test and benchmark support: MOCCASIN-style random layered graphs (its section 5.1), shared by
// tests/remat and perf/remat_report.cpp. Needs only roam_core, so perf programs compile the
// .cpp directly without GoogleTest.
#pragma once

#include <string>

#include "core/graph.h"

namespace roam::testing {

struct LayeredGraphOptions {
  int nodes = 100;
  int width = 5;        // nodes per layer
  int back_layers = 4;  // inputs come from at most this many previous layers
  int max_inputs = 3;   // every node but the first reads 1 to this many nodes
  Bytes min_size = 1, max_size = 100;
  int min_cost = 1, max_cost = 100;
  std::string op_name = "node";
  bool last_is_output = false;  // the last node's output is a graph output
};

// Node v reads 1 to max_inputs nodes: the first from the layer before its own (within its own
// layer for the first layer), the others from the back_layers layers before; output sizes
// and costs uniform in their ranges. One output per node, no views, no phases.
Graph RandomLayered(const LayeredGraphOptions& options, unsigned seed);

// A 16-node layered graph, 4 nodes a layer, sizes and costs 1-10: small enough for brute
// force and the ilp, and often with orders below the xla-dfs order's peak.
Graph SmallLayered(unsigned seed);

// The same graph with its ops renumbered in a random topological order (each step picks
// uniformly among the ready ops), so that its program order is that order: MOCCASIN's
// "randomly generated" input order (its section 3), whose no-remat peak its budgets are
// fractions of. For graphs of one output per op and no views (RandomLayered's).
Graph InRandomOrder(const Graph& graph, unsigned seed);

}  // namespace roam::testing
