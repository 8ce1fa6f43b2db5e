// The aten operators the generators use, each emitting what PyTorch 1.13's dispatcher runs
// for it in eager mode (forward op, views, the saved tensors) and recording its backward
// formula (derivatives.yaml / FunctionsManual.cpp) on the tape. docs/generators.md lists the
// decompositions.
#pragma once

#include <cstdint>
#include <vector>

#include "gen/builder.h"

namespace roam::gen {

// Where the step runs decides how dropout lowers: CUDA uses the fused native_dropout with a
// bool mask, the CPU path bernoulli_ into a mask of the input's dtype.
enum class Device { kCuda, kCpu };

class Ops {
 public:
  Ops(Tape& tape, Device device) : t_(tape), device_(device) {}
  Tape& tape() { return t_; }
  Device device() const { return device_; }

  // ---- views -------------------------------------------------------------------------------
  V View(V x, const Shape& shape);     // must be viewable
  V Reshape(V x, const Shape& shape);  // _reshape_alias, or clone + _unsafe_view
  V UnsafeView(V x, const Shape& shape);
  V T(V x);
  V Transpose(V x, std::int64_t d0, std::int64_t d1);
  V Permute(V x, const std::vector<std::int64_t>& dims);
  V Expand(V x, const Shape& shape);
  V Detach(V x);  // an explicit Tensor.detach(), not autograd's saving of a tensor
  V Slice(V x, std::int64_t dim, std::int64_t start, std::int64_t end);
  V Select(V x, std::int64_t dim, std::int64_t index);
  std::vector<V> Split(V x, std::int64_t size, std::int64_t dim);

  // ---- pointwise and reductions ------------------------------------------------------------
  V Clone(V x);  // contiguous copy
  V Contiguous(V x) { return t_.is_contiguous(x) ? x : Clone(x); }
  V Add(V a, V b);
  V AddInPlace(V a, V b);
  V Mul(V a, V b);
  V MulScalar(V a);
  V DivScalar(V a);
  V MaskedFill(V x, V mask);
  V Gelu(V x);
  V Tanh(V x);
  V ReluInPlace(V x);
  V Relu6InPlace(V x);                                 // hardtanh_(0, 6)
  V Mean(V x, const std::vector<std::int64_t>& dims);  // keepdim
  V Cat(const std::vector<V>& xs, std::int64_t dim);
  V Dropout(V x, double p);

  // ---- mixed precision and the llama family (gen/aten_decoder.cpp) ---------------------------
  // x.to(dtype): aten._to_copy, backward _to_copy back; x itself when it has the dtype already
  // (Tensor.to returns self without dispatching).
  V Cast(V x, DType dtype);
  V AddScalar(V x);  // x + a Python number
  V PowScalar(V x);  // x.pow(2)
  V Rsqrt(V x);
  V Neg(V x);
  V Silu(V x);
  V Unsqueeze(V x, std::int64_t dim);
  V Alias(V x);  // what indexing returns when every slice of the index is elided
  // F.scaled_dot_product_attention(q, k, v, is_causal=True) on [B, H, T, hd] as PyTorch 2.x
  // runs it on a GPU: one aten._scaled_dot_product_flash_attention, which returns the output
  // (in the kernel's [B, T, H, hd] layout, seen as [B, H, T, hd]) and the float32 logsumexp
  // [B, H, T], and saves q, k, v, the output and the logsumexp; no probabilities. Its backward
  // is one _scaled_dot_product_flash_attention_backward giving the three input gradients.
  V ScaledDotProductAttention(V q, V k, V v);

  // ---- matrix products ----------------------------------------------------------------------
  V Mm(V a, V b);
  V Bmm(V a, V b);
  V Addmm(V bias, V a, V b);
  V Matmul(V a, V b);               // aten::matmul's decomposition for the cases the models use
  V Linear(V x, V weight, V bias);  // at::linear (bias may be kNone)

  // ---- nn ----------------------------------------------------------------------------------
  V Embedding(V weight, V indices);
  V LayerNorm(V x, V weight, V bias);
  V Softmax(V x);  // over the last dim
  V LogSoftmax(V x);
  // Mean reduction, returns the scalar loss. log_probs [N, C] with target [N] lowers to
  // nll_loss, [N, C, H, W] with target [N, H, W] (a per-pixel loss) to nll_loss2d.
  V NllLoss(V log_probs, V target);
  // F.cross_entropy over the class dimension: the last of [N, C], the second of [N, C, H, W]
  // (the same _log_softmax op and shapes either way).
  V CrossEntropy(V logits, V target) { return NllLoss(LogSoftmax(logits), target); }

  struct Conv {
    std::int64_t stride = 1, padding = 0, groups = 1;
  };
  V Conv2d(V x, V weight, V bias, Conv conv);
  // nn.ConvTranspose2d (output_padding 0): aten.convolution with transposed=True, weight
  // [Cin, Cout / groups, k, k], output (H - 1) * stride - 2 * padding + k.
  V ConvTranspose2d(V x, V weight, V bias, Conv conv);
  // F.batch_norm in training mode: num_batches_tracked.add_(1), the reserve tensor, then
  // native_batch_norm. Running statistics are read (their in-place update is not modelled:
  // they are persistent and nothing else reads them).
  V BatchNorm(V x, V weight, V bias, V running_mean, V running_var, V num_batches_tracked);
  V MaxPool2d(V x, std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
    return MaxPool2dWithIndices(x, kernel, stride, padding).output;
  }
  // F.max_pool2d(..., return_indices=True): the same op, its indices kept for an unpool.
  struct Pooled {
    V output = kNone, indices = kNone;
  };
  Pooled MaxPool2dWithIndices(V x, std::int64_t kernel, std::int64_t stride, std::int64_t padding);
  // F.max_unpool2d(x, indices, output_size=[out_h, out_w]); its backward gathers the gradient
  // at the indices (FunctionsManual's max_pool_double_backward: two views, gather, a view).
  V MaxUnpool2d(V x, V indices, std::int64_t out_h, std::int64_t out_w);
  V AdaptiveAvgPool2d(V x, std::int64_t out_h, std::int64_t out_w);

 private:
  Tape& t_;
  Device device_;
};

}  // namespace roam::gen
