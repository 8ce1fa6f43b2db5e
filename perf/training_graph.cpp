#include "perf/training_graph.h"

#include <algorithm>
#include <string>
#include <vector>

namespace roam::perf {
namespace {

size_t U(int i) { return static_cast<size_t>(i); }

constexpr int kOpsPerBlock = 120;  // 13 forward, 23 backward, 12 parameters x 7 Adam ops
constexpr int kHeadOps = 13;       // logits, loss, their backward, the head's Adam update

class Builder {
 public:
  explicit Builder(std::string name) { graph_.name = std::move(name); }

  OpId Op(const char* name, Phase phase) {
    graph_.ops.push_back({static_cast<ExternalId>(graph_.ops.size()), name, phase, {}, {}});
    return static_cast<OpId>(graph_.ops.size() - 1);
  }
  TensorId Make(Bytes size, OpId producer, TensorKind kind, TensorId alias_of = kNoTensor) {
    Tensor t;
    t.ext_id = static_cast<ExternalId>(graph_.tensors.size());
    t.size = size;
    t.producer = producer;
    t.kind = kind;
    t.alias_of = alias_of;
    graph_.tensors.push_back(t);
    return static_cast<TensorId>(graph_.tensors.size() - 1);
  }
  void Use(OpId op, std::initializer_list<TensorId> tensors) {
    for (TensorId t : tensors) graph_.tensors[U(t)].consumers.push_back(op);
  }
  // An op reading `inputs` and producing one tensor.
  TensorId Apply(const char* name, Phase phase, std::initializer_list<TensorId> inputs, Bytes size,
                 TensorKind kind) {
    OpId op = Op(name, phase);
    Use(op, inputs);
    return Make(size, op, kind);
  }
  OpId Producer(TensorId t) const { return graph_.tensors[U(t)].producer; }
  Graph Finish() {
    Finalize(graph_, graph_.name);
    return std::move(graph_);
  }

 private:
  Graph graph_;
};

struct Param {
  Bytes bytes = 0;
  TensorId weight = kNoTensor;
  TensorId grad = kNoTensor;
  OpId last_reader = kNoOp;  // last backward op reading the weight
};

struct Linear {
  Param w, b;
};

struct Norm {
  Param w, b;
};

}  // namespace

int BlocksForOps(int ops) {
  return std::max(1, (ops - kHeadOps + kOpsPerBlock - 1) / kOpsPerBlock);
}

Graph TrainingGraph(const TrainingGraphParams& p) {
  Builder g("synthetic-transformer-" + std::to_string(p.blocks));
  const Bytes act = p.activation, attn = p.attention, h = p.hidden;
  const Bytes stat = AlignUp(act / h, 4);    // per-row mean / rstd of a layer norm
  const Bytes logits_size = act / h * 1000;  // a 1000-way classifier head
  constexpr auto kF = Phase::kForward, kB = Phase::kBackward, kO = Phase::kOptimizer;
  constexpr auto kAct = TensorKind::kActivation, kGrad = TensorKind::kGradient;

  std::vector<Param*> params;
  auto param = [&](Param& q, Bytes elements) {
    q.bytes = elements * 4;
    q.weight = g.Make(q.bytes, kNoOp, TensorKind::kWeight);
    params.push_back(&q);
  };
  auto linear = [&](Linear& l, Bytes in, Bytes out) {
    param(l.w, in * out);
    param(l.b, out);
  };
  auto norm = [&](Norm& n) {
    param(n.w, h);
    param(n.b, h);
  };

  struct Block {
    Norm ln1, ln2;
    Linear qkv, proj, fc1, fc2;
    // Activations saved for the backward pass.
    TensorId x, ln1_out, mean1, rstd1, qkv_out, q, k, v, probs, ctx, x1, ln2_out, mean2, rstd2,
        fc1_out, gelu_out;
  };
  std::vector<Block> blocks(U(p.blocks));
  for (Block& b : blocks) {
    norm(b.ln1);
    linear(b.qkv, h, 3 * h);
    linear(b.proj, h, h);
    norm(b.ln2);
    linear(b.fc1, h, 4 * h);
    linear(b.fc2, 4 * h, h);
  }
  Param head;
  param(head, h * 1000);
  TensorId x = g.Make(act, kNoOp, TensorKind::kInput);

  // Forward.
  auto layer_norm = [&](TensorId in, Norm& n, TensorId* mean, TensorId* rstd) {
    OpId op = g.Op("aten.native_layer_norm", kF);
    g.Use(op, {in, n.w.weight, n.b.weight});
    TensorId out = g.Make(act, op, kAct);
    *mean = g.Make(stat, op, kAct);
    *rstd = g.Make(stat, op, kAct);
    return out;
  };
  auto addmm = [&](TensorId in, Linear& l, Bytes size) {
    return g.Apply("aten.addmm", kF, {l.b.weight, in, l.w.weight}, size, kAct);
  };
  for (Block& b : blocks) {
    b.x = x;
    b.ln1_out = layer_norm(x, b.ln1, &b.mean1, &b.rstd1);
    b.qkv_out = addmm(b.ln1_out, b.qkv, 3 * act);
    OpId split = g.Op("aten.split", kF);
    g.Use(split, {b.qkv_out});
    b.q = g.Make(act, split, kAct, b.qkv_out);
    b.k = g.Make(act, split, kAct, b.qkv_out);
    b.v = g.Make(act, split, kAct, b.qkv_out);
    TensorId scores = g.Apply("aten.bmm", kF, {b.q, b.k}, attn, kAct);
    b.probs = g.Apply("aten._softmax", kF, {scores}, attn, kAct);
    b.ctx = g.Apply("aten.bmm", kF, {b.probs, b.v}, act, kAct);
    TensorId proj = addmm(b.ctx, b.proj, act);
    b.x1 = g.Apply("aten.add", kF, {x, proj}, act, kAct);
    b.ln2_out = layer_norm(b.x1, b.ln2, &b.mean2, &b.rstd2);
    b.fc1_out = addmm(b.ln2_out, b.fc1, 4 * act);
    b.gelu_out = g.Apply("aten.gelu", kF, {b.fc1_out}, 4 * act, kAct);
    TensorId fc2 = addmm(b.gelu_out, b.fc2, act);
    x = g.Apply("aten.add", kF, {b.x1, fc2}, act, kAct);
  }
  TensorId logits = g.Apply("aten.mm", kF, {x, head.weight}, logits_size, kAct);
  TensorId loss = g.Apply("aten.nll_loss", kF, {logits}, 4, TensorKind::kTemporary);

  // Backward, mirroring the forward pass.
  TensorId dloss = g.Apply("aten.ones_like", kB, {loss}, 4, kGrad);
  TensorId dlogits = g.Apply("aten.nll_loss_backward", kB, {dloss, logits}, logits_size, kGrad);
  head.grad = g.Apply("aten.mm", kB, {dlogits, x}, head.bytes, kGrad);
  TensorId dx = g.Apply("aten.mm", kB, {dlogits, head.weight}, act, kGrad);
  head.last_reader = g.Producer(dx);
  auto linear_backward = [&](TensorId dout, TensorId saved_in, Linear& l, Bytes in_size) {
    TensorId din = g.Apply("aten.mm", kB, {dout, l.w.weight}, in_size, kGrad);
    l.w.last_reader = l.b.last_reader = g.Producer(din);
    l.w.grad = g.Apply("aten.mm", kB, {dout, saved_in}, l.w.bytes, kGrad);
    l.b.grad = g.Apply("aten.sum", kB, {dout}, l.b.bytes, kGrad);
    return din;
  };
  auto norm_backward = [&](TensorId dout, TensorId in, TensorId mean, TensorId rstd, Norm& n) {
    OpId op = g.Op("aten.native_layer_norm_backward", kB);
    g.Use(op, {dout, in, mean, rstd, n.w.weight, n.b.weight});
    TensorId din = g.Make(act, op, kGrad);
    n.w.grad = g.Make(n.w.bytes, op, kGrad);
    n.b.grad = g.Make(n.b.bytes, op, kGrad);
    n.w.last_reader = n.b.last_reader = op;
    return din;
  };
  for (auto it = blocks.rbegin(); it != blocks.rend(); ++it) {
    Block& b = *it;
    TensorId dgelu = linear_backward(dx, b.gelu_out, b.fc2, 4 * act);
    TensorId dfc1 = g.Apply("aten.gelu_backward", kB, {dgelu, b.fc1_out}, 4 * act, kGrad);
    TensorId dln2 = linear_backward(dfc1, b.ln2_out, b.fc1, act);
    TensorId dx1_norm = norm_backward(dln2, b.x1, b.mean2, b.rstd2, b.ln2);
    TensorId dx1 = g.Apply("aten.add", kB, {dx, dx1_norm}, act, kGrad);
    TensorId dctx = linear_backward(dx1, b.ctx, b.proj, act);
    TensorId dprobs = g.Apply("aten.bmm", kB, {dctx, b.v}, attn, kGrad);
    TensorId dv = g.Apply("aten.bmm", kB, {b.probs, dctx}, act, kGrad);
    TensorId dscores = g.Apply("aten._softmax_backward_data", kB, {dprobs, b.probs}, attn, kGrad);
    TensorId dq = g.Apply("aten.bmm", kB, {dscores, b.k}, act, kGrad);
    TensorId dk = g.Apply("aten.bmm", kB, {dscores, b.q}, act, kGrad);
    TensorId dqkv = g.Apply("aten.cat", kB, {dq, dk, dv}, 3 * act, kGrad);
    TensorId dln1 = linear_backward(dqkv, b.ln1_out, b.qkv, act);
    TensorId dx_norm = norm_backward(dln1, b.x, b.mean1, b.rstd1, b.ln1);
    dx = g.Apply("aten.add", kB, {dx1, dx_norm}, act, kGrad);
  }

  // Adam, one parameter after another as torch.optim's for-loop implementation runs it:
  // in-place updates of the persistent state and weight (aliases cost nothing), a temporary
  // denominator, and size-0 edges ordering the updates.
  TensorId previous_step = kNoTensor;
  for (Param* q : params) {
    const Bytes bytes = q->bytes;
    TensorId m = g.Make(bytes, kNoOp, TensorKind::kOptimizerState);
    TensorId v = g.Make(bytes, kNoOp, TensorKind::kOptimizerState);
    OpId mul_m = g.Op("aten.mul_", kO);
    g.Use(mul_m, {m});
    if (previous_step != kNoTensor) g.Use(mul_m, {previous_step});
    TensorId m1 = g.Make(bytes, mul_m, TensorKind::kOptimizerState, m);
    OpId add_m = g.Op("aten.add_", kO);
    g.Use(add_m, {m1, q->grad});
    TensorId m2 = g.Make(bytes, add_m, TensorKind::kOptimizerState, m1);
    OpId mul_v = g.Op("aten.mul_", kO);
    g.Use(mul_v, {v});
    TensorId v1 = g.Make(bytes, mul_v, TensorKind::kOptimizerState, v);
    OpId addcmul = g.Op("aten.addcmul_", kO);
    g.Use(addcmul, {v1, q->grad});
    TensorId v2 = g.Make(bytes, addcmul, TensorKind::kOptimizerState, v1);
    TensorId denom = g.Apply("aten.sqrt", kO, {v2}, bytes, TensorKind::kTemporary);
    OpId add_eps = g.Op("aten.add_", kO);
    g.Use(add_eps, {denom});
    TensorId denom2 = g.Make(bytes, add_eps, TensorKind::kTemporary, denom);
    OpId update = g.Op("aten.addcdiv_", kO);
    g.Use(update, {q->weight, m2, denom2});
    g.Make(bytes, update, TensorKind::kWeight, q->weight);
    // The in-place write must wait for the last backward op reading the weight.
    TensorId after_readers = g.Make(0, q->last_reader, TensorKind::kControl);
    g.Use(update, {after_readers});
    previous_step = g.Make(0, update, TensorKind::kControl);
  }
  Graph graph = g.Finish();
  graph.tensors[U(loss)].output = true;  // returned to the caller: resident to the end
  return graph;
}

}  // namespace roam::perf
