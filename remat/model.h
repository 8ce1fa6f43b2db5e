// The remat model (docs/remat.md, "The model"): which ops may be computed again, what each
// costs, remat schedules, their checks, and the rewritten graph a schedule induces.
//
// A remat schedule lists ops of the original graph in execution order, an op once per
// computation: its first appearance is the original, each later one a copy. Every op reads
// the latest computation of each of its inputs scheduled before it. Rewrite() turns it into
// the rewritten graph; CheckFaithful() (used by `roam validate`) checks any graph that holds
// copies.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/types.h"
#include "remat/params.h"

namespace roam::remat {

// Whether op may be computed again: it is not an optimizer op, not an in-place write (an
// aten name ending in '_', which PyTorch reserves for them) into the storage of a graph input,
// has outputs, and either draws no random numbers or rule.rng_state_kept. An in-place write
// to an activation is recomputable, but CheckSchedule only accepts its copy where the storage
// it writes was recomputed first (so the copy writes the fresh copy, never the original).
bool IsRecomputable(const Graph& graph, OpId op, const RecomputeRule& rule = {});
// Output t of op is a state update that a copy of op leaves out: op is a batch norm whose
// update rule.state_update_skipped allows skipping, and t lies on a graph input's storage.
bool IsSkippedStateUpdate(const Graph& graph, OpId op, TensorId t, const RecomputeRule& rule = {});
// The op draws random numbers (by its aten name).
bool IsRandom(std::string_view name);

// The cost remat charges for op: Op::cost, or when the file gave none, the memory-bound
// estimate kCostPerByte * (bytes of its input and output tensors), views (outputs that alias
// an input, inputs read nothing) counting 0 bytes.
double OpCost(const Graph& graph, OpId op);
double TotalCost(const Graph& graph);

using Schedule = std::vector<OpId>;  // ops of the original graph, see above

// Empty when the schedule is valid for graph: every op appears at least once, repeats are
// recomputable (rule), every input of every computation is produced earlier (or is a graph
// input), no computation reads a value whose storage an in-place op has since overwritten,
// and a repeated in-place write writes a recomputed storage. Otherwise names the first
// problem.
std::string CheckSchedule(const Graph& graph, std::span<const OpId> schedule,
                          const RecomputeRule& rule = {});

struct Rewritten {
  Graph graph;               // originals keep their dense ids; copies follow, in schedule order
  std::vector<OpId> order;   // the schedule as ops of graph
  std::vector<OpId> origin;  // per op of graph: the original op it computes
  std::vector<int> recompute_count;  // per original op: copies made of it
};

// The rewritten graph of a valid schedule (std::invalid_argument otherwise). Copies get fresh
// external ids above the largest one, names and phases of their originals, Op::recomputes set,
// and one fresh tensor per output of the original (same size and kind, aliasing the latest
// computation of what the original's output aliases, never a graph output). Consumers are
// rewired to the latest computation before them. program_order is the schedule.
Rewritten Rewrite(const Graph& graph, std::span<const OpId> schedule,
                  const RecomputeRule& rule = {});

// Checks the copies of a graph: each copy recomputes an op that is not itself a copy, has its
// name, and produces outputs of the same sizes, kinds and aliasing, output by output; its
// inputs carry the same values as the original's (a tensor carries the value of the original
// tensor it recomputes); no copy is a graph output. With original given, also checks that the
// graph minus its copies is original: the same ops and tensors under the same ids, each op
// reading the same values. Empty when faithful, else the first problem.
std::string CheckFaithful(const Graph& graph, const Graph* original = nullptr);

}  // namespace roam::remat
