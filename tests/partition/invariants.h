// Test support: every invariant of docs/partition.md, each computed from the definitions
// (ComputeLifetimes of the concatenated order, MemoryInsensitivePositions, TheoreticalPeak),
// not from the partition's own bookkeeping. Failures are reported through GoogleTest.
#pragma once

#include <span>

#include "core/graph.h"
#include "core/memory_model.h"
#include "partition/partition.h"

namespace roam::testing {

void CheckPartitionInvariants(const Graph& graph, const MemoryModel& model,
                              const SubgraphTree& tree, std::span<const OpId> input_order,
                              int node_limit);

// Partitions graph.program_order with the given node limit and checks the invariants.
void PartitionAndCheck(const Graph& graph, int node_limit);

}  // namespace roam::testing
