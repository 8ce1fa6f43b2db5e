// Baseline operator orders: the peers roam is measured against (docs/baselines.md).
//
// In: a finalized graph and its memory model. Out: a topological order of all ops.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/memory_model.h"

namespace roam {

// "program", "lescea", "xla-list", "xla-dfs", "heuristic" (best of the three greedy ones).
std::span<const std::string_view> OrderNames();

// Throws InputError for an unknown name. Deterministic; O((ops + edges) log ops).
std::vector<OpId> ScheduleOrder(std::string_view name, const Graph& graph,
                                const MemoryModel& model);

// The individual schedulers, for callers that already built the dependencies.
std::vector<OpId> LesceaOrder(const Graph& graph, const MemoryModel& model,
                              const Dependencies& deps);
std::vector<OpId> XlaListOrder(const Graph& graph, const MemoryModel& model,
                               const Dependencies& deps);
std::vector<OpId> XlaDfsOrder(const Graph& graph, const MemoryModel& model,
                              const Dependencies& deps);

}  // namespace roam
