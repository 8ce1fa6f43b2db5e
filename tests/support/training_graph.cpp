#include "tests/support/training_graph.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "core/types.h"

namespace roam::testing {
namespace {

class Builder {
 public:
  Graph graph;

  OpId AddOp(const std::string& name, Phase phase) {
    graph.ops.push_back(roam::Op{0, name, phase, {}, {}});
    return static_cast<OpId>(graph.ops.size() - 1);
  }
  TensorId Input(Bytes size, TensorKind kind) { return NewTensor(size, kNoOp, kind, kNoTensor); }
  TensorId Out(OpId op, Bytes size, TensorKind kind, TensorId alias_of = kNoTensor) {
    return NewTensor(size, op, kind, alias_of);
  }
  void Read(OpId op, TensorId t) {
    auto& consumers = graph.tensors[U(t)].consumers;
    if (std::find(consumers.begin(), consumers.end(), op) == consumers.end())
      consumers.push_back(op);
    // Every reader of a storage must run before the next in-place write to it.
    readers_[Root(t)].push_back(op);
  }
  // An in-place write of t's storage by op: ordered after every earlier reader by size-0
  // tensors, and the written result is an alias of t.
  TensorId Write(OpId op, TensorId t, TensorKind kind) {
    for (OpId reader : readers_[Root(t)]) {
      if (reader == op) continue;
      TensorId order = Out(reader, 0, TensorKind::kControl);
      Read(op, order);
    }
    readers_[Root(t)].clear();
    Read(op, t);
    return Out(op, graph.tensors[U(t)].size, kind, t);
  }

 private:
  TensorId NewTensor(Bytes size, OpId producer, TensorKind kind, TensorId alias_of) {
    Tensor t;
    t.size = size;
    t.producer = producer;
    t.kind = kind;
    t.alias_of = alias_of;
    graph.tensors.push_back(t);
    return static_cast<TensorId>(graph.tensors.size() - 1);
  }
  TensorId Root(TensorId t) const {
    while (graph.tensors[U(t)].alias_of != kNoTensor) t = graph.tensors[U(t)].alias_of;
    return t;
  }
  std::map<TensorId, std::vector<OpId>> readers_;
};

struct Path {
  TensorId weight, weight_t, pre, act;  // act = pre when there is no activation
  bool has_act = false;
};

struct Layer {
  TensorId input;
  std::vector<Path> paths;
  TensorId bias = kNoTensor;
  bool residual = false;
  int long_skip = -1;  // index of the earlier layer whose input is added
};

}  // namespace

Graph TrainingLikeGraph(std::mt19937_64& rng, const TrainingGraphOptions& options) {
  auto chance = [&](double p) { return std::uniform_real_distribution<double>(0, 1)(rng) < p; };
  auto size = [&] { return std::uniform_int_distribution<Bytes>(1, options.max_size)(rng); };
  const Phase fwd = Phase::kForward, bwd = Phase::kBackward, opt = Phase::kOptimizer;
  Builder b;
  b.graph.name = "training-like";

  // Forward.
  TensorId x = b.Input(size(), TensorKind::kInput);
  std::vector<Layer> layers;
  for (int l = 0; l < options.layers; ++l) {
    Layer layer;
    layer.input = x;
    const Bytes width = size();
    int paths = chance(options.branch_prob)
                    ? std::uniform_int_distribution<int>(2, std::max(2, options.max_paths))(rng)
                    : 1;
    std::vector<TensorId> outs;
    for (int i = 0; i < paths; ++i) {
      Path p;
      p.weight = b.Input(size(), TensorKind::kWeight);
      OpId t = b.AddOp("aten.t", fwd);
      b.Read(t, p.weight);
      p.weight_t = b.Out(t, b.graph.tensors[U(p.weight)].size, TensorKind::kWeight, p.weight);
      OpId mm = b.AddOp("aten.mm", fwd);
      b.Read(mm, x);
      b.Read(mm, p.weight_t);
      p.pre = p.act = b.Out(mm, width, TensorKind::kActivation);
      if (chance(0.8)) {
        p.has_act = true;
        if (chance(options.inplace_prob)) {
          // A reader of the pre-activation value (kept for the merge), then relu_ over it.
          OpId clone = b.AddOp("aten.clone", fwd);
          b.Read(clone, p.pre);
          outs.push_back(b.Out(clone, width, TensorKind::kActivation));
          OpId relu = b.AddOp("aten.relu_", fwd);
          p.act = b.Write(relu, p.pre, TensorKind::kActivation);
        } else {
          OpId relu = b.AddOp("aten.relu", fwd);
          b.Read(relu, p.pre);
          p.act = b.Out(relu, width, TensorKind::kActivation);
        }
      }
      outs.push_back(p.act);
      layer.paths.push_back(p);
    }
    layer.residual = l > 0 && chance(options.residual_prob);
    if (layer.residual) outs.push_back(x);
    if (l >= 2 && chance(options.long_skip_prob)) {
      layer.long_skip = std::uniform_int_distribution<int>(1, l - 1)(rng);
      outs.push_back(layers[U(layer.long_skip)].input);
    }
    if (chance(options.bias_prob)) layer.bias = b.Input(size(), TensorKind::kWeight);
    if (outs.size() > 1 || layer.bias != kNoTensor) {
      OpId add = b.AddOp("aten.add", fwd);
      for (TensorId t : outs) b.Read(add, t);
      if (layer.bias != kNoTensor) b.Read(add, layer.bias);
      x = b.Out(add, width, TensorKind::kActivation);
    } else {
      x = outs.front();
    }
    layers.push_back(layer);
  }
  TensorId target = b.Input(8, TensorKind::kInput);
  OpId loss_op = b.AddOp("aten.nll_loss_forward", fwd);
  b.Read(loss_op, x);
  b.Read(loss_op, target);
  TensorId loss = b.Out(loss_op, 4, TensorKind::kActivation);
  b.graph.tensors[U(loss)].output = true;

  // Backward, mirroring the forward.
  OpId seed;
  if (chance(options.floating_loss_grad_prob)) {
    seed = b.AddOp("aten.ones", bwd);
  } else {
    seed = b.AddOp("aten.ones_like", bwd);
    b.Read(seed, loss);
  }
  TensorId g_loss = b.Out(seed, 4, TensorKind::kGradient);
  OpId loss_bwd = b.AddOp("aten.nll_loss_backward", bwd);
  b.Read(loss_bwd, g_loss);
  b.Read(loss_bwd, x);
  b.Read(loss_bwd, target);
  TensorId g = b.Out(loss_bwd, b.graph.tensors[U(x)].size, TensorKind::kGradient);
  std::vector<std::pair<TensorId, TensorId>> weight_grads;  // (weight, gradient)
  std::map<int, std::vector<TensorId>> pending;             // layer -> extra gradients of its input
  for (int l = options.layers - 1; l >= 0; --l) {
    const Layer& layer = layers[U(l)];
    if (layer.bias != kNoTensor) {
      OpId sum = b.AddOp("aten.sum", bwd);
      b.Read(sum, g);
      weight_grads.push_back(
          {layer.bias, b.Out(sum, b.graph.tensors[U(layer.bias)].size, TensorKind::kGradient)});
    }
    std::vector<TensorId> input_grads;
    if (layer.residual) input_grads.push_back(g);
    if (layer.long_skip >= 0) pending[layer.long_skip].push_back(g);
    for (const Path& p : layer.paths) {
      TensorId gp = g;
      const Bytes width = b.graph.tensors[U(p.pre)].size;
      if (p.has_act) {
        OpId tb = b.AddOp("aten.threshold_backward", bwd);
        b.Read(tb, g);
        b.Read(tb, p.act);
        gp = b.Out(tb, width, TensorKind::kGradient);
      }
      OpId gt = b.AddOp("aten.t", bwd);
      b.Read(gt, gp);
      TensorId gpt = b.Out(gt, width, TensorKind::kGradient, gp);
      // The saved input read through a view made in the backward (llama's "aten.t" of a bf16
      // cast): a copy of the input leaves that view aliasing the copy. No draw at 0, so graphs
      // without it stay as they were.
      TensorId saved = layer.input;
      if (l > 0 && options.view_again_prob > 0 && chance(options.view_again_prob)) {
        OpId view = b.AddOp("aten.t", bwd);
        b.Read(view, layer.input);
        saved = b.Out(view, b.graph.tensors[U(layer.input)].size,
                      b.graph.tensors[U(layer.input)].kind, layer.input);
      }
      OpId dw = b.AddOp("aten.mm", bwd);
      b.Read(dw, gpt);
      b.Read(dw, saved);
      weight_grads.push_back(
          {p.weight, b.Out(dw, b.graph.tensors[U(p.weight)].size, TensorKind::kGradient)});
      if (l > 0) {
        OpId dx = b.AddOp("aten.mm", bwd);
        b.Read(dx, gp);
        b.Read(dx, p.weight);
        input_grads.push_back(
            b.Out(dx, b.graph.tensors[U(layer.input)].size, TensorKind::kGradient));
      }
    }
    if (l == 0) break;
    for (TensorId extra : pending[l]) input_grads.push_back(extra);
    if (input_grads.size() > 1) {
      OpId add = b.AddOp("aten.add", bwd);
      for (TensorId t : input_grads) b.Read(add, t);
      g = b.Out(add, b.graph.tensors[U(layer.input)].size, TensorKind::kGradient);
    } else {
      g = input_grads.front();
    }
  }

  // Optimizer, one branch per weight, in place.
  for (const auto& [w, grad] : weight_grads) {
    const Bytes ws = b.graph.tensors[U(w)].size;
    if (!options.adam) {
      OpId upd = b.AddOp("aten.add_", opt);
      b.Read(upd, grad);
      b.Write(upd, w, TensorKind::kWeight);
      continue;
    }
    TensorId m = b.Input(ws, TensorKind::kOptimizerState);
    TensorId v = b.Input(ws, TensorKind::kOptimizerState);
    OpId m_mul = b.AddOp("aten.mul_", opt);
    TensorId m1 = b.Write(m_mul, m, TensorKind::kOptimizerState);
    OpId m_add = b.AddOp("aten.add_", opt);
    b.Read(m_add, grad);
    TensorId m2 = b.Write(m_add, m1, TensorKind::kOptimizerState);
    OpId v_mul = b.AddOp("aten.mul_", opt);
    TensorId v1 = b.Write(v_mul, v, TensorKind::kOptimizerState);
    OpId v_add = b.AddOp("aten.addcmul_", opt);
    b.Read(v_add, grad);
    TensorId v2 = b.Write(v_add, v1, TensorKind::kOptimizerState);
    OpId sqrt = b.AddOp("aten.sqrt", opt);
    b.Read(sqrt, v2);
    TensorId s = b.Out(sqrt, ws, TensorKind::kTemporary);
    OpId div = b.AddOp("aten.div", opt);
    b.Read(div, s);
    TensorId d = b.Out(div, ws, TensorKind::kTemporary);
    OpId eps = b.AddOp("aten.add_", opt);
    TensorId d2 = b.Write(eps, d, TensorKind::kTemporary);
    OpId upd = b.AddOp("aten.addcdiv_", opt);
    b.Read(upd, m2);
    b.Read(upd, d2);
    b.Write(upd, w, TensorKind::kWeight);
  }

  Graph& graph = b.graph;
  if (!options.phases)
    for (Op& op : graph.ops) op.phase = Phase::kUnknown;
  std::vector<ExternalId> op_ids(graph.ops.size()), tensor_ids(graph.tensors.size());
  std::iota(op_ids.begin(), op_ids.end(), 0);
  std::iota(tensor_ids.begin(), tensor_ids.end(), 0);
  std::shuffle(op_ids.begin(), op_ids.end(), rng);
  std::shuffle(tensor_ids.begin(), tensor_ids.end(), rng);
  for (size_t i = 0; i < op_ids.size(); ++i) graph.ops[i].ext_id = op_ids[i] * 5 + 7;
  for (size_t i = 0; i < tensor_ids.size(); ++i) graph.tensors[i].ext_id = tensor_ids[i] * 3 + 2;
  graph.program_order.resize(graph.ops.size());
  std::iota(graph.program_order.begin(), graph.program_order.end(), 0);
  Finalize(graph, "training-like");
  return graph;
}

Graph MlpChain(int layers, const std::vector<double>& costs) {
  Graph g;
  g.name = "chain";
  auto op = [&](std::string name, Phase phase) {
    g.ops.push_back(Op{static_cast<ExternalId>(g.ops.size()), std::move(name), phase, {}, {}});
    return static_cast<OpId>(g.ops.size() - 1);
  };
  auto tensor = [&](Bytes size, OpId producer, TensorKind kind) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(g.tensors.size());
    t.size = size;
    t.producer = producer;
    t.kind = kind;
    g.tensors.push_back(t);
    return static_cast<TensorId>(g.tensors.size() - 1);
  };
  auto read = [&](OpId o, TensorId t) { g.tensors[U(t)].consumers.push_back(o); };
  TensorId x = tensor(100, kNoOp, TensorKind::kInput);
  std::vector<TensorId> acts = {x};
  for (int i = 0; i < layers; ++i) {
    OpId f = op("aten.mm", Phase::kForward);
    read(f, acts.back());
    acts.push_back(tensor(100, f, TensorKind::kActivation));
  }
  OpId loss = op("aten.sum", Phase::kForward);
  read(loss, acts.back());
  TensorId grad = tensor(10, loss, TensorKind::kActivation);
  for (int i = layers; i >= 1; --i) {
    OpId b = op("aten.mm_backward", Phase::kBackward);
    read(b, grad);
    read(b, acts[U(i - 1)]);
    read(b, acts[U(i)]);
    grad = tensor(100, b, TensorKind::kGradient);
  }
  g.tensors[U(grad)].output = true;
  if (!costs.empty()) {
    g.op_costs.resize(g.ops.size());
    for (size_t i = 0; i < costs.size() && i < g.ops.size(); ++i) g.op_costs[i] = costs[i];
  }
  Finalize(g, "chain");
  return g;
}

}  // namespace roam::testing
