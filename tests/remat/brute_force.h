// Brute force over remat schedules for the remat tests' oracles on tiny graphs.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/support/training_graph.h"

namespace roam::testing {

using remat::Schedule;

// Training-like graphs small enough for brute force: two single-path layers, SGD, no biases
// or long skips (TrainingLikeGraph, in-place activations and residual adds left random).
TrainingGraphOptions TinyTrainingGraphOptions();

// Graphs for the oracles: eight MLP chains of 3 or 4 layers with random op costs 1-9, then
// those of six TinyTrainingGraphOptions graphs with at most 10 ops; seed picks the draws.
std::vector<Graph> TinyRematGraphs(std::uint64_t seed);

// The theoretical peak of a schedule's rewritten graph.
Bytes SchedulePeak(const Graph& graph, std::span<const OpId> schedule, Bytes alignment = 1);

// Every valid schedule with at most `extra` recomputations (each op at most twice).
void ForEachSchedule(const Graph& graph, int extra,
                     const std::function<void(const Schedule&)>& visit);

// The least recompute cost of any schedule ForEachSchedule visits whose peak is within budget
// (infinity where none is).
double BruteForceCost(const Graph& graph, Bytes budget, int extra);

// BruteForceCost at many budgets from one enumeration: the (peak, cost) of every schedule
// ForEachSchedule visits, and the least cost among those within a budget (infinity: none).
std::vector<std::pair<Bytes, double>> BruteForcePoints(const Graph& graph, int extra);
double CheapestWithin(std::span<const std::pair<Bytes, double>> points, Bytes budget);

// A schedule as a method's result (method "test", status "feasible"), for the passes that
// improve an incumbent.
remat::detail::MethodResult Described(const Graph& graph, Schedule schedule,
                                      const remat::RematParams& params);

}  // namespace roam::testing
