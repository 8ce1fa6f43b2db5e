#include "gen/cost.h"

#include <algorithm>

namespace roam::gen {
namespace {

double Product(const Shape& shape, size_t from) {
  double p = 1.0;
  for (size_t i = from; i < shape.size(); ++i) p *= static_cast<double>(shape[i]);
  return p;
}

// A convolution's multiply-adds from its input, output and weight shapes: one per weight
// element at each position of the side whose channels are the weight's first dimension, the
// output of a convolution (weight [Cout, Cin/g, k, k]) and the input of a transposed one
// (weight [Cin, Cout/g, k, k]). The graph does not say which it is; where both sides have
// w[0] channels, a convolution's output is no larger than its input (unless its padding
// exceeds half its kernel) and a transposed one's input no larger than its output, so the
// smaller side is taken. The exporter reads aten's `transposed` argument instead.
double ConvMultiplyAdds(const Shape* input, const Shape* output, const Shape* w) {
  if (w == nullptr || w->empty() || (*w)[0] <= 0) return 0.0;
  double positions = -1.0;
  for (const Shape* side : {output, input}) {
    if (side == nullptr || side->size() < 2 || (*side)[1] != (*w)[0]) continue;
    const double p = Product(*side, 0) / static_cast<double>((*w)[0]);
    if (positions < 0.0 || p < positions) positions = p;
  }
  if (positions < 0.0 && output != nullptr)
    positions = Product(*output, 0) / static_cast<double>((*w)[0]);
  return positions < 0.0 ? 0.0 : positions * Product(*w, 0);
}

// FLOPs of the compute-bound ops; 0 for the memory-bound rest. The contracted dimension is
// read from the operand in the position the aten signature puts it.
double Flops(std::string_view name, std::span<const CostOperand> in,
             std::span<const CostOperand> out) {
  auto shape = [&](size_t i) -> const Shape* {
    return i < in.size() && in[i].shape != nullptr ? in[i].shape : nullptr;
  };
  if (out.empty() || out[0].shape == nullptr) return 0.0;
  const double out_elems = Product(*out[0].shape, 0);
  if (name == "aten.mm" || name == "aten.bmm") {
    const Shape* a = shape(0);
    return a != nullptr && !a->empty() ? 2.0 * out_elems * static_cast<double>(a->back()) : 0.0;
  }
  if (name == "aten.addmm" || name == "aten.baddbmm") {
    const Shape* a = shape(1);
    return a != nullptr && !a->empty() ? 2.0 * out_elems * static_cast<double>(a->back()) : 0.0;
  }
  if (name == "aten.convolution")  // (input, weight, bias)
    return 2.0 * ConvMultiplyAdds(shape(0), out[0].shape, shape(1));
  if (name == "aten._scaled_dot_product_flash_attention" ||
      name == "aten._scaled_dot_product_flash_attention_backward") {
    // q [B, H, T, hd], k [B, H, S, hd] (after the backward's incoming gradient): q kᵀ and
    // p v, 4·B·H·T·S·hd, of which a causal kernel computes half the blocks; the backward
    // recomputes the scores and makes three gradients, 2.5 times the forward.
    const bool backward = name.ends_with("_backward");
    const Shape* q = shape(backward ? 1 : 0);
    const Shape* k = shape(backward ? 2 : 1);
    if (q == nullptr || k == nullptr || q->size() != 4 || k->size() != 4) return 0.0;
    const double forward = 2.0 * Product(*q, 0) * static_cast<double>((*k)[2]);
    return backward ? 2.5 * forward : forward;
  }
  if (name == "aten.convolution_backward") {
    // (grad_out, input, weight): the input and weight gradients are one convolution each.
    return 4.0 * ConvMultiplyAdds(shape(1), shape(0), shape(2));
  }
  return 0.0;
}

}  // namespace

double EstimateCost(std::string_view name, std::span<const CostOperand> inputs,
                    std::span<const CostOperand> outputs) {
  double bytes = 0.0;
  for (const CostOperand& o : inputs) bytes += static_cast<double>(o.bytes);
  for (const CostOperand& o : outputs) bytes += static_cast<double>(o.bytes);
  return std::max(Flops(name, inputs, outputs), kCostPerByte * bytes);
}

}  // namespace roam::gen
