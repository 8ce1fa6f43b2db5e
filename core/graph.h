// The training computation graph: one op per operator, one tensor per edge.
//
// Everything inside is indexed densely (OpId, TensorId); the ids a file used are kept in
// ext_id so that outputs can speak the user's ids back.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/types.h"

namespace roam {

enum class Phase { kUnknown, kForward, kBackward, kOptimizer, kOther };
enum class TensorKind {
  kNone,
  kWeight,
  kOptimizerState,
  kInput,
  kActivation,
  kGradient,
  kTemporary,
  kControl
};

std::string_view ToString(Phase phase);
std::string_view ToString(TensorKind kind);
bool ParsePhase(std::string_view text, Phase* phase);
bool ParseTensorKind(std::string_view text, TensorKind* kind);

// The unit of Op::cost is the FLOP-equivalent: a FLOP of a matrix product, or 1/kCostPerByte
// of a byte moved by a memory-bound op. 100 FLOP per byte is a reference device's matmul rate
// over its memory bandwidth (an A100: 156 TFLOP/s TF32 over 1.56 TB/s), so an op costs
// max(FLOPs, kCostPerByte * bytes read and written), the roofline time on that device.
inline constexpr double kCostPerByte = 100.0;
// The largest cost an input may give one op (10^21 FLOP-equivalents, hours on any device): far
// above any real op, and small enough that the sum over any graph roam reads stays finite, so
// every ratio of costs (a remat's compute overhead) is a number.
inline constexpr double kMaxOpCost = 1e21;

struct Op {
  ExternalId ext_id = 0;
  std::string name;  // e.g. "aten.convolution"
  Phase phase = Phase::kUnknown;
  std::vector<TensorId> inputs;   // tensors it consumes, derived from Tensor::consumers
  std::vector<TensorId> outputs;  // tensors it produces, derived from Tensor::producer
};

struct Tensor {
  ExternalId ext_id = 0;
  Bytes size = 0;         // unaligned bytes; 0 = pure ordering dependency
  OpId producer = kNoOp;  // kNoOp: graph input (weights, optimizer state, data)
  std::vector<OpId> consumers;
  TensorId alias_of = kNoTensor;  // shares the storage of this tensor (view / in-place)
  bool output = false;            // must stay resident to the end of the step
  TensorKind kind = TensorKind::kNone;
};

struct Graph {
  std::string name;
  std::vector<Op> ops;
  std::vector<Tensor> tensors;
  std::vector<OpId> program_order;  // always a full topological order after Finalize()
  // Optional per-op data, kept beside Op so that Op stays a five-field aggregate. Each is
  // empty (nothing given) or, after Finalize(), one entry per op.
  // Estimated compute in FLOP-equivalents (see kCostPerByte); nullopt where not given, and
  // then the remat stage uses its documented default (docs/formats.md, "Costs").
  std::vector<std::optional<double>> op_costs;
  // The op recomputes another op of the same graph (a remat copy, docs/remat.md): it reads
  // the same values and produces the same values, output by output; kNoOp for originals.
  std::vector<OpId> op_recomputes;

  std::optional<double> cost(OpId op) const {
    return op_costs.empty() ? std::nullopt : op_costs[static_cast<size_t>(op)];
  }
  OpId recomputes(OpId op) const {
    return op_recomputes.empty() ? kNoOp : op_recomputes[static_cast<size_t>(op)];
  }

  int num_ops() const { return static_cast<int>(ops.size()); }
  int num_tensors() const { return static_cast<int>(tensors.size()); }
};

// Op-to-op dependencies in compressed sparse rows, deduplicated. An edge a->b exists when b
// consumes a tensor a produces, and when b produces a view/in-place alias of a tensor a
// produced (a view is made from its base, so the base must exist first).
struct Dependencies {
  std::vector<int> pred_begin, succ_begin;  // size num_ops + 1
  std::vector<OpId> preds, succs;

  std::span<const OpId> Preds(OpId op) const {
    return {preds.data() + pred_begin[static_cast<size_t>(op)],
            static_cast<size_t>(pred_begin[static_cast<size_t>(op) + 1] -
                                pred_begin[static_cast<size_t>(op)])};
  }
  std::span<const OpId> Succs(OpId op) const {
    return {succs.data() + succ_begin[static_cast<size_t>(op)],
            static_cast<size_t>(succ_begin[static_cast<size_t>(op) + 1] -
                                succ_begin[static_cast<size_t>(op)])};
  }
};

Dependencies BuildDependencies(const Graph& graph);

// The ops reachable from start along deps, forward (its descendants) or backward (its
// ancestors), start included; one flag per op.
std::vector<char> ReachableOps(const Dependencies& deps, OpId start, bool forward);

// Fills Op::inputs/outputs from the tensors and, when program_order is empty, sets it to a
// deterministic topological order (Kahn's algorithm, smallest external id first).
// Throws InputError naming ops on a cycle, or when program_order is not a topological
// permutation.
void Finalize(Graph& graph, std::string_view source);

// Returns the ops on one dependency cycle if the graph has one, else empty.
std::vector<OpId> FindCycle(const Graph& graph, const Dependencies& deps);

// Checks that order is a permutation of the ops respecting every dependency; on failure
// returns a message naming the offending op(s), else empty.
std::string CheckTopological(const Graph& graph, const Dependencies& deps,
                             std::span<const OpId> order);

}  // namespace roam
