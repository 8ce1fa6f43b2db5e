// The llama family: published parameter counts, bf16-mixed precision's rules (which ops run in
// bfloat16, where the casts are, float32 master weights, gradients and optimizer state),
// grouped-query attention, the fused attention op, and the config's errors.
#include "gen/llama.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/error.h"
#include "core/memory_model.h"
#include "core/types.h"
#include "gen/config.h"
#include "gen/generate.h"
#include "tests/config/config_errors.h"

namespace roam::gen {
namespace {

using config::LoadConfig;
using config::ParseConfig;

Config Preset(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/" + name + ".yaml", overrides);
}

std::vector<TensorId> Weights(const Graph& g) {
  std::vector<TensorId> w;
  for (size_t i = 0; i < g.tensors.size(); ++i)
    if (g.tensors[i].producer == kNoOp && g.tensors[i].kind == TensorKind::kWeight)
      w.push_back(static_cast<TensorId>(i));
  return w;
}

Bytes Sum(const Graph& g, TensorKind kind) {
  Bytes total = 0;
  for (const Tensor& t : g.tensors)
    if (t.producer == kNoOp && t.kind == kind) total += t.size;
  return total;
}

int Count(const Graph& g, const std::string& name) {
  return static_cast<int>(
      std::count_if(g.ops.begin(), g.ops.end(), [&](const Op& op) { return op.name == name; }));
}

// The fresh outputs of op, in order.
std::vector<Bytes> OutputSizes(const Graph& g, OpId op) {
  std::vector<Bytes> sizes;
  for (TensorId t : g.ops[U(op)].outputs)
    if (g.tensors[U(t)].kind != TensorKind::kControl) sizes.push_back(g.tensors[U(t)].size);
  return sizes;
}

TEST(LlamaParameters, EqualTheLlama2Models) {
  // llama-tiny's: embeddings 2 x 100 x 64, per layer 4,096 + 2 x 2,048 + 4,096 (attention)
  // + 3 x 6,144 (SwiGLU) + 2 x 64 (norms), and the final norm's 64.
  const std::map<std::string, Bytes> published = {{"llama-tiny", 74'560},
                                                  {"llama-7b", 6'738'415'616},
                                                  {"llama-13b", 13'015'864'320},
                                                  {"llama-70b", 68'976'648'192}};
  for (const auto& [name, count] : published) {
    // One layer generated, the rest counted: a layer's parameters are the same in each.
    const Config full = Preset(name);
    const Graph one = GenerateGraph(Preset(name, {"model.n_layer=1", "model.seq_len=8"}));
    const Graph two = GenerateGraph(Preset(name, {"model.n_layer=2", "model.seq_len=8"}));
    const Bytes per_layer = Sum(two, TensorKind::kWeight) - Sum(one, TensorKind::kWeight);
    const Bytes total = Sum(one, TensorKind::kWeight) + per_layer * (full.model.n_layer - 1);
    EXPECT_EQ(total / 4, count) << name;  // float32 master weights
  }
  // And once at full size, where the optimizer state is two float32 moments per parameter.
  const Graph g = GenerateGraph(Preset("llama-7b"));
  EXPECT_EQ(Sum(g, TensorKind::kWeight) / 4, 6'738'415'616);
  EXPECT_EQ(Sum(g, TensorKind::kOptimizerState), 2 * Sum(g, TensorKind::kWeight));
}

TEST(LlamaParameters, FfnWidthFollowsMetasRuleWhenUnset) {
  ModelConfig m = ModelDefaults(Family::kLlama);
  EXPECT_EQ(LlamaFfnWidth(m), 11008);
  m.n_embd = 5120;
  EXPECT_EQ(LlamaFfnWidth(m), 13824);
  m.n_inner = 28672;
  EXPECT_EQ(LlamaFfnWidth(m), 28672);
}

// With the casts taken out, a bf16-mixed graph is the fp32 graph op for op: autocast changes
// dtypes, not the computation. So each op can be compared with its fp32 self. (Transposes of
// weights, views of no bytes, trade places in the backward: the casts shift the autograd
// engine's sequence numbers.)
std::vector<OpId> Comparable(const Graph& g) {
  std::vector<OpId> kept;
  for (OpId op : g.program_order)
    if (g.ops[U(op)].name != "aten._to_copy" && g.ops[U(op)].name != "aten.t") kept.push_back(op);
  return kept;
}

TEST(LlamaPrecision, MatrixProductsRunInBfloat16AndTheRestKeepsFloat32) {
  const Graph mixed = GenerateGraph(Preset("llama-tiny"));
  const Graph fp32 = GenerateGraph(Preset("llama-tiny", {"training.precision=fp32"}));
  EXPECT_EQ(Count(fp32, "aten._to_copy"), 0);
  const std::vector<OpId> kept = Comparable(mixed), reference = Comparable(fp32);
  ASSERT_EQ(kept.size(), reference.size());
  // Ops whose outputs are all bfloat16 under autocast: the products and what only reads them.
  const std::vector<std::string> low = {
      "aten.mm",  "aten.bmm", "aten.silu",       "aten.silu_backward",
      "aten.cat", "aten.neg", "aten.masked_fill"};
  // Ops that stay float32: the loss, the softmax (Meta takes it in float32), RMSNorm's
  // statistics, the embedding (not on autocast's lists) and the whole optimizer step.
  const std::vector<std::string> full = {"aten._log_softmax",
                                         "aten.nll_loss_forward",
                                         "aten.nll_loss_backward",
                                         "aten._softmax",
                                         "aten.rsqrt",
                                         "aten.mean",
                                         "aten.embedding",
                                         "aten.sqrt",
                                         "aten.embedding_dense_backward"};
  int low_seen = 0, full_seen = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    const Op& a = mixed.ops[U(kept[i])];
    const Op& b = fp32.ops[U(reference[i])];
    ASSERT_EQ(a.name, b.name) << "op " << i;
    ASSERT_EQ(a.phase, b.phase) << a.name;
    const auto sa = OutputSizes(mixed, kept[i]), sb = OutputSizes(fp32, reference[i]);
    ASSERT_EQ(sa.size(), sb.size()) << a.name;
    if (std::find(low.begin(), low.end(), a.name) != low.end()) {
      for (size_t k = 0; k < sa.size(); ++k) EXPECT_EQ(2 * sa[k], sb[k]) << a.name << " op " << i;
      ++low_seen;
    }
    if (std::find(full.begin(), full.end(), a.name) != full.end() || a.phase == Phase::kOptimizer) {
      EXPECT_EQ(sa, sb) << a.name << " op " << i;
      ++full_seen;
    }
  }
  EXPECT_GT(low_seen, 40);
  EXPECT_GT(full_seen, 100);
}

TEST(LlamaPrecision, EachMatrixWeightIsCastOnceAndItsGradientCastBack) {
  const Graph g = GenerateGraph(Preset("llama-tiny"));
  const Config c = Preset("llama-tiny");
  const Bytes C = c.model.n_embd;
  int cast = 0, plain = 0;
  for (TensorId w : Weights(g)) {
    const Tensor& weight = g.tensors[U(w)];
    std::vector<OpId> casts;
    for (OpId reader : weight.consumers)
      if (g.ops[U(reader)].name == "aten._to_copy" && g.ops[U(reader)].phase == Phase::kForward)
        casts.push_back(reader);
    if (weight.size == 4 * C) {  // RMSNorm weights multiply a float32 activation: no cast
      EXPECT_TRUE(casts.empty());
      ++plain;
      continue;
    }
    if (weight.size == 4 * C * c.model.vocab && casts.empty()) {  // the embedding
      ++plain;
      continue;
    }
    ASSERT_EQ(casts.size(), 1u) << "weight " << w;
    EXPECT_EQ(OutputSizes(g, casts[0]), std::vector<Bytes>{weight.size / 2});
    ++cast;
  }
  // Per layer wq, wk, wv, wo, w1, w2, w3, and the output head; the norms and the embedding.
  EXPECT_EQ(cast, 7 * c.model.n_layer + 1);
  EXPECT_EQ(plain, 2 * c.model.n_layer + 2);
  // Every gradient reaching a weight is float32: AccumulateGrad's detach (one per parameter)
  // reads a tensor the size of its weight.
  std::map<Bytes, int> weights_of_size, grads_of_size;
  for (TensorId w : Weights(g)) ++weights_of_size[g.tensors[U(w)].size];
  for (const Op& op : g.ops)
    if (op.name == "aten.detach" && op.phase == Phase::kBackward)
      ++grads_of_size[g.tensors[U(op.outputs[0])].size];
  EXPECT_EQ(grads_of_size, weights_of_size);
}

// bf16-master: the model in bfloat16 (weights, activations, gradients; no casts in the forward
// pass but RMSNorm's float32 arithmetic and the loss's input), a float32 master and two float32
// AdamW moments per weight, and per weight one float32 copy of its gradient stepping the master,
// which is then copied back into the weight.
TEST(LlamaPrecision, Bf16MasterSteps32BitMastersAndCopiesThemBack) {
  const Config c = Preset("llama-tiny", {"training.precision=bf16-master"});
  const Graph g = GenerateGraph(c);
  const Graph fp32 = GenerateGraph(Preset("llama-tiny", {"training.precision=fp32"}));
  EXPECT_EQ(Sum(g, TensorKind::kWeight) * 2, Sum(fp32, TensorKind::kWeight));
  // Masters and moments: 3 float32 tensors per weight, where fp32 has its 2 moments.
  EXPECT_EQ(Sum(g, TensorKind::kOptimizerState) * 2, Sum(fp32, TensorKind::kOptimizerState) * 3);
  int forward_casts = 0;
  for (const Op& op : g.ops)
    if (op.name == "aten._to_copy" && op.phase == Phase::kForward) ++forward_casts;
  // Per RMSNorm (2 a layer and the final one) float32 in and back; the rotary tables are
  // bfloat16 already; the logits to float32; Meta's float32 softmax in and back (llama-tiny
  // has the unfused attention).
  ASSERT_EQ(c.model.attention, Attention::kMath);
  EXPECT_EQ(forward_casts, 2 * (2 * c.model.n_layer + 1) + 1 + 2 * c.model.n_layer);
  std::map<Bytes, int> weights_of_size;
  for (TensorId w : Weights(g)) ++weights_of_size[g.tensors[U(w)].size];
  std::map<Bytes, int> copied_of_size, cast_grads_of_size;
  for (const Op& op : g.ops) {
    if (op.phase != Phase::kOptimizer) continue;
    if (op.name == "aten.copy_") {
      // Into a bfloat16 weight from its float32 master.
      const Tensor& into = g.tensors[U(op.inputs[0])];
      ++copied_of_size[into.size];
      EXPECT_EQ(g.tensors[U(op.inputs[1])].size, 2 * into.size);
    }
    if (op.name == "aten._to_copy") ++cast_grads_of_size[g.tensors[U(op.outputs[0])].size / 2];
  }
  EXPECT_EQ(copied_of_size, weights_of_size);
  EXPECT_EQ(cast_grads_of_size, weights_of_size);
  // A model a quarter of LLaMA-2 7B's depth at its width and sequence: activations in bfloat16
  // bring the theoretical peak to 0.45-0.75 of fp32's (issue 26's target; bf16-mixed's autocast
  // keeps it at about 1, docs/generators.md).
  const Graph big_master =
      GenerateGraph(Preset("llama-7b", {"model.n_layer=4", "training.precision=bf16-master"}));
  const Graph big_fp32 =
      GenerateGraph(Preset("llama-7b", {"model.n_layer=4", "training.precision=fp32"}));
  const double ratio = static_cast<double>(TheoreticalPeak(big_master, BuildMemoryModel(big_master),
                                                           big_master.program_order)) /
                       static_cast<double>(TheoreticalPeak(big_fp32, BuildMemoryModel(big_fp32),
                                                           big_fp32.program_order));
  EXPECT_GE(ratio, 0.45);
  EXPECT_LE(ratio, 0.75);
}

TEST(LlamaAttention, GroupedQueryAttentionRepeatsTheKeyValueHeads) {
  const Config c = Preset("llama-tiny");  // 4 heads, 2 key/value heads, width 64
  const Graph gqa = GenerateGraph(c);
  const Graph mha = GenerateGraph(Preset("llama-tiny", {"model.n_kv_head=4"}));
  const Bytes C = c.model.n_embd, kv = C / 2;
  std::map<Bytes, int> sizes;
  for (TensorId w : Weights(gqa)) ++sizes[gqa.tensors[U(w)].size];
  EXPECT_EQ(sizes[4 * kv * C], 2 * c.model.n_layer);  // wk and wv: [n_kv_head * hd, n_embd]
  EXPECT_EQ(sizes[4 * C * C], 2 * c.model.n_layer);   // wq and wo
  // repeat_kv: unsqueeze, expand and a reshape that copies, for k and v of each layer.
  EXPECT_EQ(Count(gqa, "aten.unsqueeze"), 2 * c.model.n_layer);
  EXPECT_EQ(Count(gqa, "aten.squeeze"), 2 * c.model.n_layer);
  EXPECT_EQ(Count(mha, "aten.unsqueeze"), 0);
  EXPECT_LT(Sum(gqa, TensorKind::kWeight), Sum(mha, TensorKind::kWeight));
}

TEST(LlamaAttention, TheFusedOpSavesTheLogsumexpAndNoProbabilities) {
  // Long enough that the attention matrix [B, H, T, T] outweighs every other tensor.
  const std::vector<std::string> longer = {"model.seq_len=1024", "model.n_positions=1024"};
  std::vector<std::string> fused = longer;
  fused.push_back("model.attention=sdpa");
  const Config c = Preset("llama-tiny", fused);
  const Graph g = GenerateGraph(c);
  const Bytes B = c.model.batch, T = c.model.seq_len, H = c.model.n_head;
  const Bytes hd = c.model.n_embd / H, scores = 2 * B * H * T * T;
  EXPECT_EQ(Count(g, "aten._softmax"), 0);
  EXPECT_EQ(Count(g, "aten.bmm"), 0);
  EXPECT_EQ(Count(g, "aten._scaled_dot_product_flash_attention"), c.model.n_layer);
  EXPECT_EQ(Count(g, "aten._scaled_dot_product_flash_attention_backward"), c.model.n_layer);
  for (size_t i = 0; i < g.ops.size(); ++i) {
    const Op& op = g.ops[i];
    if (op.name != "aten._scaled_dot_product_flash_attention") continue;
    // The output in bfloat16 and the float32 logsumexp [B, H, T].
    EXPECT_EQ(OutputSizes(g, static_cast<OpId>(i)),
              (std::vector<Bytes>{2 * B * H * T * hd, 4 * B * H * T}));
    const TensorId lse = op.outputs[1];
    ASSERT_EQ(g.tensors[U(lse)].consumers.size(), 1u);
    const OpId backward = g.tensors[U(lse)].consumers[0];
    EXPECT_EQ(g.ops[U(backward)].name, "aten._scaled_dot_product_flash_attention_backward");
    // The backward reads the output too (its gradient, q, k, v, out, logsumexp) and makes the
    // three input gradients, k and v at the query's head count (after repeat_kv).
    EXPECT_EQ(g.ops[U(backward)].inputs.size(), 6u);
    EXPECT_EQ(OutputSizes(g, backward), std::vector<Bytes>(3, 2 * B * H * T * hd));
    // Causal: half of q kᵀ's and p v's 2·T·T·hd multiply-adds per head; backward 2.5 times;
    // the cost is the larger of the FLOPs and the bytes moved (gen/cost.h).
    auto bytes = [&](OpId id) {
      double total = 0.0;
      for (TensorId t : g.ops[U(id)].inputs) total += static_cast<double>(g.tensors[U(t)].size);
      for (Bytes b : OutputSizes(g, id)) total += static_cast<double>(b);
      return kCostPerByte * total;
    };
    const double flops = 2.0 * static_cast<double>(B * H * T * T * hd);
    ASSERT_GT(flops, bytes(static_cast<OpId>(i)));  // compute-bound at this length
    EXPECT_DOUBLE_EQ(g.op_costs[i].value_or(0.0), std::max(flops, bytes(static_cast<OpId>(i))));
    EXPECT_DOUBLE_EQ(g.op_costs[U(backward)].value_or(0.0), std::max(2.5 * flops, bytes(backward)));
  }
  // The probabilities are never materialised; the unfused ops make them.
  for (const Tensor& t : g.tensors) EXPECT_LT(t.size, scores);
  const Graph math = GenerateGraph(Preset("llama-tiny", longer));
  EXPECT_EQ(Count(math, "aten._softmax"), c.model.n_layer);
  EXPECT_TRUE(std::any_of(math.tensors.begin(), math.tensors.end(),
                          [&](const Tensor& t) { return t.size >= scores; }));
}

using testing::ExpectMentions;
std::string ErrorOf(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return testing::ErrorOf(yaml, overrides, "llama.yaml");
}

TEST(LlamaConfig, DefaultsAreLlama2SevenBInBf16MixedAndOtherFamiliesStayFp32) {
  const Config c = ParseConfig("model: {family: llama}", "l.yaml");
  EXPECT_EQ(c.model.n_embd, 4096);
  EXPECT_EQ(c.model.n_kv_head, 32);
  EXPECT_EQ(c.model.seq_len, 4096);
  EXPECT_EQ(c.model.vocab, 32000);
  EXPECT_FALSE(c.model.tie_embeddings);
  EXPECT_EQ(c.model.attention, Attention::kSdpa);
  EXPECT_EQ(c.training.precision, Precision::kBf16Mixed);
  EXPECT_EQ(ParseConfig("model: {family: gpt2}", "g.yaml").training.precision, Precision::kFp32);
}

TEST(LlamaConfig, BadInputNamesTheFileAndTheKey) {
  ExpectMentions(ErrorOf("model: {family: llama, n_head: 32, n_kv_head: 5}"),
                 {"llama.yaml", "model.n_kv_head", "not divisible"});
  ExpectMentions(ErrorOf("model: {family: llama}\ntraining: {precision: fp8}"),
                 {"llama.yaml", "training.precision", "fp8", "bf16-mixed"});
  ExpectMentions(ErrorOf("model: {family: gpt2}\ntraining: {precision: bf16-mixed}"),
                 {"llama.yaml", "training.precision", "llama only"});
  ExpectMentions(ErrorOf("model: {family: llama, dtype: bfloat16}"),
                 {"llama.yaml", "training.precision", "float32 master weights"});
  ExpectMentions(ErrorOf("model: {family: llama, attention: flash}"),
                 {"llama.yaml", "model.attention", "sdpa"});
  ExpectMentions(ErrorOf("model: {family: llama, dropout: 0.1}"),
                 {"llama.yaml", "model.dropout", "does not apply to family llama"});
  ExpectMentions(ErrorOf("model: {family: gpt2, n_kv_head: 4}"), {"model.n_kv_head"});
  ExpectMentions(ErrorOf("model: {family: llama, n_embd: 96, n_head: 32}"),
                 {"model.n_head", "even"});
  ExpectMentions(ErrorOf("model: {family: llama, seq_len: 8192}"),
                 {"model.seq_len", "n_positions"});
  // Pure bfloat16 training is fp32 precision with a bfloat16 model.
  EXPECT_EQ(ErrorOf("model: {family: llama, dtype: bfloat16}\ntraining: {precision: fp32}"), "");
}

}  // namespace
}  // namespace roam::gen
