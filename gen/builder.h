// A tape that records a training step the way PyTorch's eager mode runs it, one aten op at a
// time, and turns it into a roam Graph (docs/generators.md).
//
// In: ops emitted by the model generators (fresh outputs, views, in-place updates) plus, for
// every differentiable op, a backward closure. Out: a finalized Graph whose program_order is
// the emission order.
//
// Memory semantics follow PyTorch: a view or an in-place result is an alias of its base (no
// bytes of its own); an in-place write gets a size-0 ordering tensor from every op that read
// the storage since the previous write, so no reader can be moved after the write; a tensor a
// backward closure reads stays alive until that backward op runs.
//
// Backward() simulates torch.autograd's engine: dependency counting from the loss, a ready
// queue ordered by sequence number (latest forward node first, AccumulateGrad nodes before
// everything), gradients of a tensor used twice summed with aten.add when the second arrives,
// broadcast gradients reduced by sum + view before they are passed on, and a gradient whose
// dtype differs from its input's (a float32 gradient reaching a bfloat16 operand of a promoted
// add) cast with aten._to_copy, as the engine's validate_outputs does.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/graph.h"
#include "core/types.h"

namespace roam::gen {

// A generator bug (a model built with inconsistent shapes), not bad input: std::logic_error,
// the same from every file of gen/.
[[noreturn]] void Bug(const std::string& what);

enum class DType : std::uint8_t { kFloat32, kFloat16, kBFloat16, kInt64, kBool, kUInt8 };
Bytes DTypeSize(DType dtype);
// The result dtype of a binary op on two tensors with dimensions (torch.result_type): the same
// dtype, else float32 for two different floating types.
DType PromoteTypes(DType a, DType b);
std::string_view ToString(DType dtype);

// The most ops one generated graph may have (docs/configs.md, "Limits"): 2^18 is over 20 times
// GPT-2 XL's training step, and takes about 10 s and 1.5 GB to generate.
inline constexpr std::int64_t kMaxGeneratedOps = std::int64_t{1} << 18;

using Shape = std::vector<std::int64_t>;
using V = TensorId;  // a tensor handle on the tape
inline constexpr V kNone = kNoTensor;

// A tensor the generator would make holds more than kMaxBytes (core/bytes.h). The sizes come
// from the config, so it is bad input; GenerateGraph(const Config&) names the key responsible.
class TensorTooLarge : public InputError {
 public:
  // tensor: e.g. "the output of aten.mm (op 12), shape [4096, 50257] of float32"; dims: the
  // dimensions whose product is too large, to match against the config's keys.
  TensorTooLarge(const std::string& tensor, Shape dims);
  const std::string& tensor() const { return tensor_; }
  const Shape& dims() const { return dims_; }

 private:
  std::string tensor_;
  Shape dims_;
};

std::string ShapeString(const Shape& shape);

// Both throw TensorTooLarge when a product of dimensions exceeds kMaxBytes.
std::int64_t NumElements(const Shape& shape);
Shape ContiguousStrides(const Shape& shape);
// a * b for two non-negative dimensions (e.g. batch times sequence length), checked the same way.
std::int64_t MulDims(std::int64_t a, std::int64_t b);

struct TensorMeta {
  Shape shape;
  Shape strides;  // in elements, as PyTorch reports them
  DType dtype = DType::kFloat32;
  TensorId root = kNoTensor;  // storage owner (itself for fresh tensors)
  int version = 0;            // writes to the storage before this tensor was made
  // Autograd metadata: the node whose output this is, or the AccumulateGrad node of a leaf.
  int grad_node = -1;
  int output_nr = 0;
};

class Tape;
// Receives the gradient of every output of the forward op (kNone when none arrived) and the
// mask of inputs that need a gradient; returns one gradient per differentiable input (kNone
// for those not needed). Runs with the tape in the backward phase.
using BackwardFn = std::function<std::vector<V>(Tape&, const std::vector<V>& grads,
                                                const std::vector<bool>& needed)>;

class Tape {
 public:
  explicit Tape(std::string graph_name);

  void set_phase(Phase phase) { phase_ = phase; }
  Phase phase() const { return phase_; }

  const TensorMeta& meta(V v) const { return meta_[static_cast<size_t>(v)]; }
  const Shape& shape(V v) const { return meta(v).shape; }
  DType dtype(V v) const { return meta(v).dtype; }
  std::int64_t dim(V v) const { return static_cast<std::int64_t>(meta(v).shape.size()); }
  bool is_contiguous(V v) const;
  bool requires_grad(V v) const { return meta(v).grad_node >= 0; }

  // A graph input. A parameter (requires_grad) gets an AccumulateGrad node.
  V Input(const Shape& shape, DType dtype, TensorKind kind, bool parameter = false);

  struct Out {
    Shape shape;
    DType dtype;
    Shape strides = {};  // empty: contiguous; else a kernel's own layout (flash attention's)
  };
  // An op producing fresh contiguous tensors. kNone inputs are skipped.
  std::vector<V> Emit(std::string_view name, const std::vector<V>& inputs,
                      const std::vector<Out>& outputs);
  V Emit1(std::string_view name, const std::vector<V>& inputs, const Shape& shape, DType dtype);
  // A view op: the output aliases base's storage with the given geometry.
  V EmitView(std::string_view name, V base, const Shape& shape, const Shape& strides);
  // Several views of base from one op (split, chunk, unbind).
  std::vector<V> EmitViews(std::string_view name, V base, const std::vector<Shape>& shapes,
                           const std::vector<Shape>& strides);
  // An in-place op writing target (reading it and others); returns the new version of target.
  V EmitInPlace(std::string_view name, V target, const std::vector<V>& others);
  // Records a differentiable op: outputs get a grad node whose next edges are diff_inputs.
  // Does nothing when no input requires grad, and outside the forward phase (backward and
  // optimizer ops run without grad mode).
  void Record(const std::vector<V>& outputs, const std::vector<V>& diff_inputs, BackwardFn fn);

  // Runs the backward pass from a scalar loss (emitting aten.ones_like for its seed gradient).
  // Afterwards grad(param) is the tensor AccumulateGrad stored in param.grad, or kNone.
  void Backward(V loss);
  V grad(V param) const;

  // Marks the tensor as a graph output (resident to the end of the step).
  void MarkOutput(V v);

  // at::sum_to: sums the broadcast dimensions of grad away (sum with keepdim, then a view
  // when leading dimensions go).
  V SumTo(V grad, const Shape& shape);

  int num_ops() const { return static_cast<int>(graph_.ops.size()); }
  // Hands over the graph, finalized, with program_order = emission order.
  Graph Finish();

 private:
  struct Edge {
    int node = -1;
    int input_nr = 0;
  };
  struct Node {
    std::uint64_t sequence = 0;
    std::vector<Edge> next;           // one per differentiable input
    std::vector<Shape> input_shapes;  // shapes of the forward outputs, for sum_to
    std::vector<DType> input_dtypes;
    BackwardFn fn;
    V param = kNone;  // AccumulateGrad: the leaf it stores into
  };

  // Throws TensorTooLarge, describing the tensor as `what`, when it would exceed kMaxBytes.
  void CheckSize(const Shape& shape, DType dtype, std::string_view what) const;
  V NewTensor(const Shape& shape, const Shape& strides, DType dtype, TensorKind kind, OpId producer,
              TensorId alias_of);
  OpId NewOp(std::string_view name);
  // Fills the op's cost from its operands in argument order (gen/cost.h).
  void SetCost(OpId op, const std::vector<V>& inputs, const std::vector<V>& outputs);
  void Read(OpId op, V v);
  TensorKind DefaultKind() const;
  V Accumulate(V old_grad, V new_grad);

  std::string name_;
  Phase phase_ = Phase::kForward;
  Graph graph_;
  std::vector<TensorMeta> meta_;
  std::vector<int> writes_;                 // per storage root
  std::vector<std::vector<OpId>> readers_;  // per storage root, since the last write
  std::vector<Node> nodes_;
  std::vector<V> grads_;  // per tensor: param.grad
  std::uint64_t next_sequence_ = 0;
};

}  // namespace roam::gen
