#include "gen/builder.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <queue>
#include <stdexcept>
#include <tuple>

#include "core/bytes.h"
#include "core/types.h"
#include "gen/cost.h"

namespace roam::gen {

void Bug(const std::string& what) { throw std::logic_error("graph generator: " + what); }

Bytes DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return 4;
    case DType::kFloat16:
      return 2;
    case DType::kBFloat16:
      return 2;
    case DType::kInt64:
      return 8;
    case DType::kBool:
      return 1;
    case DType::kUInt8:
      return 1;
  }
  return 4;
}

DType PromoteTypes(DType a, DType b) {
  if (a == b) return a;
  auto floating = [](DType d) {
    return d == DType::kFloat32 || d == DType::kFloat16 || d == DType::kBFloat16;
  };
  if (floating(a) != floating(b)) return floating(a) ? a : b;
  return floating(a) ? DType::kFloat32 : a;  // integer pairs do not occur in the models
}

std::string_view ToString(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return "float32";
    case DType::kFloat16:
      return "float16";
    case DType::kBFloat16:
      return "bfloat16";
    case DType::kInt64:
      return "int64";
    case DType::kBool:
      return "bool";
    case DType::kUInt8:
      return "uint8";
  }
  return "";
}

TensorTooLarge::TensorTooLarge(const std::string& tensor, Shape dims)
    : InputError(tensor + " would take more than " + DescribeMaxBytes()),
      tensor_(tensor),
      dims_(std::move(dims)) {}

std::string ShapeString(const Shape& shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::int64_t MulDims(std::int64_t a, std::int64_t b) {
  auto product = MulBytes(a, b);
  if (!product)
    throw TensorTooLarge("a tensor with a dimension of " + std::to_string(a) + " * " +
                             std::to_string(b) + " elements",
                         {a, b});
  return *product;
}

std::int64_t NumElements(const Shape& shape) {
  std::int64_t n = 1;
  for (std::int64_t d : shape) {
    auto product = MulBytes(n, d);
    if (!product) throw TensorTooLarge("a tensor of shape " + ShapeString(shape), shape);
    n = *product;
  }
  return n;
}

Shape ContiguousStrides(const Shape& shape) {
  Shape strides(shape.size(), 1);
  std::int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    auto product = MulBytes(s, std::max<std::int64_t>(shape[i], 1));
    if (!product) throw TensorTooLarge("a tensor of shape " + ShapeString(shape), shape);
    s = *product;
  }
  return strides;
}

void Tape::CheckSize(const Shape& shape, DType dtype, std::string_view what) const {
  std::optional<Bytes> bytes = Bytes{1};
  for (std::int64_t d : shape)
    if (bytes) bytes = MulBytes(*bytes, d);
  if (bytes) bytes = MulBytes(*bytes, DTypeSize(dtype));
  if (!bytes)
    throw TensorTooLarge(
        std::string(what) + ", shape " + ShapeString(shape) + " of " + std::string(ToString(dtype)),
        shape);
}

Tape::Tape(std::string graph_name) : name_(std::move(graph_name)) { graph_.name = name_; }

bool Tape::is_contiguous(V v) const {
  const TensorMeta& m = meta(v);
  std::int64_t expected = 1;
  for (size_t i = m.shape.size(); i-- > 0;) {
    if (m.shape[i] == 1) continue;
    if (m.strides[i] != expected) return false;
    expected *= m.shape[i];
  }
  return true;
}

TensorKind Tape::DefaultKind() const {
  switch (phase_) {
    case Phase::kForward:
      return TensorKind::kActivation;
    case Phase::kBackward:
      return TensorKind::kGradient;
    default:
      return TensorKind::kTemporary;
  }
}

V Tape::NewTensor(const Shape& shape, const Shape& strides, DType dtype, TensorKind kind,
                  OpId producer, TensorId alias_of) {
  const V id = static_cast<V>(graph_.tensors.size());
  Tensor t;
  t.ext_id = id;
  CheckSize(shape, dtype,
            producer == kNoOp ? "graph input " + std::to_string(id)
                              : "the output of " + graph_.ops[U(producer)].name + " (op " +
                                    std::to_string(producer) + ")");
  t.size = NumElements(shape) * DTypeSize(dtype);
  t.producer = producer;
  t.alias_of = alias_of;
  t.kind = kind;
  graph_.tensors.push_back(std::move(t));
  TensorMeta m;
  m.shape = shape;
  m.strides = strides;
  m.dtype = dtype;
  if (alias_of == kNoTensor) {
    m.root = id;
    writes_.push_back(0);
    readers_.emplace_back();
  } else {
    m.root = meta(alias_of).root;
    writes_.push_back(0);  // unused for aliases; keeps the vectors indexable by tensor id
    readers_.emplace_back();
    m.version = writes_[U(m.root)];
  }
  meta_.push_back(std::move(m));
  grads_.push_back(kNone);
  return id;
}

OpId Tape::NewOp(std::string_view name) {
  if (static_cast<std::int64_t>(graph_.ops.size()) >= kMaxGeneratedOps)
    throw InputError(name_ + ": the generated graph would have more than " +
                     std::to_string(kMaxGeneratedOps) + " ops, roam's limit");
  const OpId id = static_cast<OpId>(graph_.ops.size());
  Op op;
  op.ext_id = id;
  op.name = name;
  op.phase = phase_;
  graph_.ops.push_back(std::move(op));
  return id;
}

void Tape::SetCost(OpId op, const std::vector<V>& inputs, const std::vector<V>& outputs) {
  auto operands = [&](const std::vector<V>& vs) {
    std::vector<CostOperand> result;
    for (V v : vs) {
      if (v == kNone)
        result.push_back({});
      else
        result.push_back({&shape(v), graph_.tensors[U(v)].size});
    }
    return result;
  };
  graph_.op_costs.resize(graph_.ops.size());
  graph_.op_costs[U(op)] =
      EstimateCost(graph_.ops[U(op)].name, operands(inputs), operands(outputs));
}

void Tape::Read(OpId op, V v) {
  if (v == kNone) return;
  const TensorMeta& m = meta(v);
  if (m.version != writes_[U(m.root)])
    Bug(graph_.ops[U(op)].name + " reads tensor " + std::to_string(v) +
        " after an in-place write to its storage");
  auto& consumers = graph_.tensors[U(v)].consumers;
  if (consumers.empty() || consumers.back() != op) consumers.push_back(op);
  auto& readers = readers_[U(m.root)];
  if (readers.empty() || readers.back() != op) readers.push_back(op);
}

V Tape::Input(const Shape& shape, DType dtype, TensorKind kind, bool parameter) {
  CheckSize(shape, dtype,
            "graph input " + std::to_string(graph_.tensors.size()) + " (" +
                std::string(ToString(kind)) + ")");
  V v = NewTensor(shape, ContiguousStrides(shape), dtype, kind, kNoOp, kNoTensor);
  if (parameter) {
    Node node;
    node.sequence = std::numeric_limits<std::uint64_t>::max();
    node.input_shapes = {shape};
    node.input_dtypes = {dtype};
    node.param = v;
    meta_[U(v)].grad_node = static_cast<int>(nodes_.size());
    nodes_.push_back(std::move(node));
  }
  return v;
}

std::vector<V> Tape::Emit(std::string_view name, const std::vector<V>& inputs,
                          const std::vector<Out>& outputs) {
  const OpId op = NewOp(name);
  for (V in : inputs) Read(op, in);
  for (const Out& out : outputs)
    CheckSize(out.shape, out.dtype,
              "the output of " + std::string(name) + " (op " + std::to_string(op) + ")");
  std::vector<V> result;
  result.reserve(outputs.size());
  for (const Out& out : outputs)
    result.push_back(NewTensor(out.shape,
                               out.strides.empty() ? ContiguousStrides(out.shape) : out.strides,
                               out.dtype, DefaultKind(), op, kNoTensor));
  SetCost(op, inputs, result);
  return result;
}

V Tape::Emit1(std::string_view name, const std::vector<V>& inputs, const Shape& shape,
              DType dtype) {
  return Emit(name, inputs, {Out{shape, dtype}})[0];
}

V Tape::EmitView(std::string_view name, V base, const Shape& shape, const Shape& strides) {
  const OpId op = NewOp(name);
  graph_.op_costs.resize(graph_.ops.size());
  graph_.op_costs[U(op)] = 0.0;  // a view moves no bytes
  Read(op, base);
  return NewTensor(shape, strides, dtype(base), graph_.tensors[U(base)].kind, op, base);
}

std::vector<V> Tape::EmitViews(std::string_view name, V base, const std::vector<Shape>& shapes,
                               const std::vector<Shape>& strides) {
  const OpId op = NewOp(name);
  graph_.op_costs.resize(graph_.ops.size());
  graph_.op_costs[U(op)] = 0.0;  // views move no bytes
  Read(op, base);
  std::vector<V> result;
  for (size_t i = 0; i < shapes.size(); ++i)
    result.push_back(
        NewTensor(shapes[i], strides[i], dtype(base), graph_.tensors[U(base)].kind, op, base));
  return result;
}

V Tape::EmitInPlace(std::string_view name, V target, const std::vector<V>& others) {
  const OpId op = NewOp(name);
  const TensorId root = meta(target).root;
  // Readers of the old value must run before the write. Those that produce one of this op's
  // inputs already do; everyone else gets an explicit size-0 ordering edge.
  std::vector<OpId> earlier = readers_[U(root)];
  Read(op, target);
  for (V in : others) Read(op, in);
  for (OpId reader : earlier) {
    if (reader == op) continue;
    auto produces_input = [&](V v) {
      return v != kNone && graph_.tensors[U(v)].producer == reader;
    };
    bool direct = produces_input(target);
    for (V in : others) direct = direct || produces_input(in);
    if (direct) continue;
    const V control = NewTensor({0}, {1}, DType::kUInt8, TensorKind::kControl, reader, kNoTensor);
    graph_.tensors[U(control)].size = 0;
    graph_.tensors[U(control)].consumers.push_back(op);
  }
  ++writes_[U(root)];
  readers_[U(root)].clear();
  const V out = NewTensor(shape(target), meta(target).strides, dtype(target),
                          graph_.tensors[U(target)].kind, op, target);
  std::vector<V> read = {target};
  read.insert(read.end(), others.begin(), others.end());
  SetCost(op, read, {out});
  return out;
}

void Tape::Record(const std::vector<V>& outputs, const std::vector<V>& diff_inputs, BackwardFn fn) {
  if (phase_ != Phase::kForward) return;
  bool any = false;
  for (V in : diff_inputs) any = any || (in != kNone && requires_grad(in));
  if (!any) return;
  Node node;
  node.sequence = next_sequence_++;
  for (V in : diff_inputs) {
    if (in != kNone && requires_grad(in))
      node.next.push_back({meta(in).grad_node, meta(in).output_nr});
    else
      node.next.push_back({-1, 0});
  }
  const int id = static_cast<int>(nodes_.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    node.input_shapes.push_back(shape(outputs[i]));
    node.input_dtypes.push_back(dtype(outputs[i]));
    meta_[U(outputs[i])].grad_node = id;
    meta_[U(outputs[i])].output_nr = static_cast<int>(i);
  }
  node.fn = std::move(fn);
  nodes_.push_back(std::move(node));
}

V Tape::SumTo(V grad, const Shape& target) {
  const Shape& sizes = shape(grad);
  if (sizes == target) return grad;
  const size_t leading = sizes.size() - target.size();
  Shape kept = sizes;
  bool reduce = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (i < leading || (target[i - leading] == 1 && sizes[i] != 1)) {
      kept[i] = 1;
      reduce = true;
    }
  }
  V g = grad;
  if (reduce) g = Emit1("aten.sum", {g}, kept, dtype(g));
  if (leading > 0) g = EmitView("aten.view", g, target, ContiguousStrides(target));
  return g;
}

V Tape::Accumulate(V old_grad, V new_grad) {
  // PyTorch 1.13's InputBuffer sums out of place unless it holds the only reference to a
  // plain tensor; gradients reaching a shared input are usually views or still referenced.
  return Emit1("aten.add", {old_grad, new_grad}, shape(old_grad), dtype(old_grad));
}

void Tape::Backward(V loss) {
  const Phase saved_phase = phase_;
  phase_ = Phase::kBackward;
  if (!requires_grad(loss)) Bug("the loss does not depend on any parameter");
  const V seed = Emit1("aten.ones_like", {loss}, shape(loss), dtype(loss));

  const int root = meta(loss).grad_node;
  std::vector<int> dependencies(nodes_.size(), 0);
  std::vector<char> seen(nodes_.size(), 0);
  std::vector<int> stack = {root};
  seen[U(root)] = 1;
  while (!stack.empty()) {
    const int n = stack.back();
    stack.pop_back();
    for (const Edge& e : nodes_[U(n)].next) {
      if (e.node < 0) continue;
      ++dependencies[U(e.node)];
      if (!seen[U(e.node)]) {
        seen[U(e.node)] = 1;
        stack.push_back(e.node);
      }
    }
  }

  std::vector<std::vector<V>> buffers(nodes_.size());
  auto buffer = [&](int n) -> std::vector<V>& {
    auto& b = buffers[U(n)];
    if (b.empty()) b.assign(nodes_[U(n)].input_shapes.size(), kNone);
    return b;
  };
  buffer(root)[U(meta(loss).output_nr)] = seed;

  // Higher sequence number first (the engine's CompareNodeTaskTime); ties, which only
  // AccumulateGrad nodes have, in arrival order.
  using Entry = std::tuple<std::uint64_t, std::int64_t, int>;
  std::priority_queue<Entry> ready;
  std::int64_t arrivals = 0;
  ready.emplace(nodes_[U(root)].sequence, -(arrivals++), root);

  while (!ready.empty()) {
    const int n = std::get<2>(ready.top());
    ready.pop();
    std::vector<V> inputs = std::move(buffer(n));
    buffers[U(n)] = {};
    const Node& node = nodes_[U(n)];
    if (node.param != kNone) {
      if (inputs[0] == kNone) continue;
      // AccumulateGrad with .grad None (zero_grad(set_to_none=True)) steals the incoming
      // gradient: param.grad = new_grad.detach(), one dispatched aten::detach per parameter
      // in eager PyTorch 1.13 (its autograd profiler records exactly one per leaf; tracing
      // under a Python dispatch mode shows two, the second an artifact).
      const V g = inputs[0];
      grads_[U(node.param)] = EmitView("aten.detach", g, shape(g), meta(g).strides);
      continue;
    }
    std::vector<bool> needed(node.next.size());
    for (size_t i = 0; i < node.next.size(); ++i) needed[i] = node.next[i].node >= 0;
    std::vector<V> outs(node.next.size(), kNone);
    const bool any_input =
        std::any_of(inputs.begin(), inputs.end(), [](V v) { return v != kNone; });
    if (any_input) {
      BackwardFn fn = node.fn;  // the closure may add nodes; do not hold a reference
      outs = fn(*this, inputs, needed);
      if (outs.size() != needed.size()) Bug("backward returned the wrong number of gradients");
    }
    const std::vector<Edge> next = nodes_[U(n)].next;
    for (size_t i = 0; i < next.size(); ++i) {
      if (next[i].node < 0 || outs[i] == kNone) continue;
      const Node& target = nodes_[U(next[i].node)];
      outs[i] = SumTo(outs[i], target.input_shapes[U(next[i].input_nr)]);
      const DType want = target.input_dtypes[U(next[i].input_nr)];
      if (dtype(outs[i]) != want) outs[i] = Emit1("aten._to_copy", {outs[i]}, shape(outs[i]), want);
    }
    for (size_t i = 0; i < next.size(); ++i) {
      const Edge e = next[i];
      if (e.node < 0) continue;
      if (outs[i] != kNone) {
        V& slot = buffer(e.node)[U(e.input_nr)];
        slot = slot == kNone ? outs[i] : Accumulate(slot, outs[i]);
      }
      if (--dependencies[U(e.node)] == 0)
        ready.emplace(nodes_[U(e.node)].sequence, -(arrivals++), e.node);
    }
  }
  phase_ = saved_phase;
}

V Tape::grad(V param) const { return grads_[U(param)]; }

void Tape::MarkOutput(V v) { graph_.tensors[U(v)].output = true; }

Graph Tape::Finish() {
  graph_.program_order.resize(graph_.ops.size());
  for (size_t i = 0; i < graph_.ops.size(); ++i) graph_.program_order[i] = static_cast<OpId>(i);
  Finalize(graph_, name_);
  return std::move(graph_);
}

}  // namespace roam::gen
