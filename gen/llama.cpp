#include "gen/llama.h"

#include <vector>

#include "gen/aten.h"
#include "gen/builder.h"
#include "gen/optim.h"

namespace roam::gen {
namespace {

// The module's forward under torch.autocast when `mixed`: the ops on autocast's
// lower-precision list (linear, matmul) cast their floating inputs to bfloat16 and the loss
// (cross_entropy, on the float32 list) casts to float32; every other op runs in the dtype its
// inputs promote to. The casts are real ops with real outputs: a weight's bfloat16 copy is
// saved for the backward like any activation, and the backward of each cast is a cast back,
// so gradients reach the float32 master weights in float32.
class Autocast {
 public:
  Autocast(Ops& ops, bool mixed) : o_(ops), mixed_(mixed) {}
  DType low() const { return DType::kBFloat16; }

  // Autocast's wrapper casts its arguments right to left (the order GCC evaluates a call's
  // arguments in): the weight before the input.
  V Linear(V x, V w) {
    if (mixed_) {
      w = o_.Cast(w, low());
      x = o_.Cast(x, low());
    }
    return o_.Linear(x, w, kNone);
  }
  V Matmul(V a, V b) {
    if (mixed_) {
      b = o_.Cast(b, low());
      a = o_.Cast(a, low());
    }
    return o_.Matmul(a, b);
  }
  V CrossEntropy(V logits, V targets) {
    if (mixed_) logits = o_.Cast(logits, DType::kFloat32);
    return o_.CrossEntropy(logits, targets);
  }

 private:
  Ops& o_;
  bool mixed_;
};

struct Layer {
  V attention_norm = kNone, wq = kNone, wk = kNone, wv = kNone, wo = kNone;
  V ffn_norm = kNone, w1 = kNone, w2 = kNone, w3 = kNone;
};

}  // namespace

std::int64_t LlamaFfnWidth(const ModelConfig& m) {
  if (m.n_inner > 0) return m.n_inner;
  const std::int64_t hidden = 2 * MulDims(4, m.n_embd) / 3;
  return (hidden + 255) / 256 * 256;
}

Graph Llama(const ModelConfig& m, const TrainingConfig& training) {
  Tape tape(m.name);
  Ops o(tape, m.device);
  // bf16-mixed: autocast over float32 weights. bf16-master: the model is bfloat16 throughout
  // (its float32 master copies live in the optimizer, gen/optim.h), so nothing is cast but the
  // loss's input and RMSNorm's float32 arithmetic.
  const bool mixed = training.precision == Precision::kBf16Mixed;
  const bool master = training.precision == Precision::kBf16Master;
  Autocast ac(o, mixed);
  const DType weight_dtype = master ? DType::kBFloat16 : m.dtype;
  const std::int64_t B = m.batch, T = m.seq_len, C = m.n_embd, H = m.n_head;
  const std::int64_t KV = m.n_kv_head > 0 ? m.n_kv_head : H, hd = C / H, F = LlamaFfnWidth(m);
  const std::int64_t n_rep = H / KV;

  std::vector<V> params;  // model.parameters() order
  auto param = [&](const Shape& shape) {
    V v = tape.Input(shape, weight_dtype, TensorKind::kWeight, /*parameter=*/true);
    params.push_back(v);
    return v;
  };
  const V tok_embeddings = param({m.vocab, C});
  std::vector<Layer> layers(static_cast<size_t>(m.n_layer));
  for (Layer& l : layers) {
    l.attention_norm = param({C});
    l.wq = param({H * hd, C});
    l.wk = param({KV * hd, C});
    l.wv = param({KV * hd, C});
    l.wo = param({C, H * hd});
    l.ffn_norm = param({C});
    l.w1 = param({F, C});
    l.w2 = param({C, F});
    l.w3 = param({F, C});
  }
  const V norm = param({C});
  const V output = m.tie_embeddings ? tok_embeddings : param({m.vocab, C});
  // Buffers: the rotary tables [n_positions, 1, hd] in the model's dtype and the bool causal
  // mask (True above the diagonal).
  const V rope_cos = tape.Input({m.n_positions, 1, hd}, weight_dtype, TensorKind::kInput);
  const V rope_sin = tape.Input({m.n_positions, 1, hd}, weight_dtype, TensorKind::kInput);
  const V causal_mask =
      tape.Input({m.n_positions, m.n_positions}, DType::kBool, TensorKind::kInput);
  const V idx = tape.Input({B, T}, DType::kInt64, TensorKind::kInput);
  const V targets = tape.Input({B, T}, DType::kInt64, TensorKind::kInput);

  // x.float() * rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps), .type_as(x) * weight.
  auto rms_norm = [&](V x, V weight) {
    V y = o.Cast(x, DType::kFloat32);
    y = o.Mul(y, o.Rsqrt(o.AddScalar(o.Mean(o.PowScalar(y), {-1}))));
    return o.Mul(o.Cast(y, tape.dtype(x)), weight);
  };
  const DType act = mixed || master ? ac.low() : m.dtype;
  // x * cos + rotate_half(x) * sin on [B, T, heads, hd], rotate_half = cat(-x2, x1).
  auto rotary = [&](V x, V cos, V sin) {
    V a = o.Mul(x, cos);
    V x2 = o.Neg(o.Slice(x, -1, hd / 2, hd));
    V rotated = o.Cat({x2, o.Slice(x, -1, 0, hd / 2)}, -1);
    return o.Add(a, o.Mul(rotated, sin));
  };
  // [B, T, KV, hd] -> [B, T, H, hd]: unsqueeze, expand, reshape (a copy).
  auto repeat_kv = [&](V x) {
    if (n_rep == 1) return x;
    x = o.Expand(o.Unsqueeze(x, 3), {B, T, KV, n_rep, hd});
    return o.Reshape(x, {B, T, H, hd});
  };

  V h = o.Embedding(tok_embeddings, idx);
  // Indexing with one slice always dispatches it; a tuple of slices that cover their whole
  // dimensions dispatches aten.alias instead (PyTorch 1.13's indexing).
  const V cos = o.Cast(o.Slice(rope_cos, 0, 0, T), act);
  const V sin = o.Cast(o.Slice(rope_sin, 0, 0, T), act);
  // The fused kernel masks by itself (is_causal): the mask is only sliced for the math path.
  V mask = kNone;
  if (m.attention == Attention::kMath)
    mask =
        T == m.n_positions ? o.Alias(causal_mask) : o.Slice(o.Slice(causal_mask, 0, 0, T), 1, 0, T);
  for (const Layer& l : layers) {
    const V x = rms_norm(h, l.attention_norm);
    V q = o.View(ac.Linear(x, l.wq), {B, T, H, hd});
    V k = o.View(ac.Linear(x, l.wk), {B, T, KV, hd});
    V v = o.View(ac.Linear(x, l.wv), {B, T, KV, hd});
    q = rotary(q, cos, sin);
    k = rotary(k, cos, sin);
    k = repeat_kv(k);
    v = repeat_kv(v);
    q = o.Transpose(q, 1, 2);
    k = o.Transpose(k, 1, 2);
    v = o.Transpose(v, 1, 2);
    V y = kNone;
    if (m.attention == Attention::kSdpa) {
      y = o.ScaledDotProductAttention(q, k, v);
    } else {
      V scores = o.MaskedFill(o.MulScalar(ac.Matmul(q, o.Transpose(k, 2, 3))), mask);
      // Meta's reference takes the softmax in float32 whatever autocast does.
      V probs = o.Cast(o.Softmax(o.Cast(scores, DType::kFloat32)), tape.dtype(q));
      y = ac.Matmul(probs, v);
    }
    y = o.View(o.Contiguous(o.Transpose(y, 1, 2)), {B, T, H * hd});
    h = o.Add(h, ac.Linear(y, l.wo));
    const V z = rms_norm(h, l.ffn_norm);
    const V gate = o.Silu(ac.Linear(z, l.w1));
    h = o.Add(h, ac.Linear(o.Mul(gate, ac.Linear(z, l.w3)), l.w2));
  }
  V logits = ac.Linear(rms_norm(h, norm), output);
  if (master) logits = o.Cast(logits, DType::kFloat32);  // the loss in float32: logits.float()
  const V flat_logits = o.View(logits, {MulDims(B, T), m.vocab});
  const V loss = ac.CrossEntropy(flat_logits, o.View(targets, {MulDims(B, T)}));

  tape.MarkOutput(loss);
  tape.Backward(loss);
  EmitOptimizerStep(tape, params, training);
  return tape.Finish();
}

}  // namespace roam::gen
