// The image ops of Ops (gen/aten.h): convolutions, batch norm, pooling and unpooling.
#include <cstdint>
#include <vector>

#include "gen/aten.h"
#include "gen/aten_internal.h"

namespace roam::gen {
namespace {

// A convolution and a transposed one share their backward: convolution_backward(grad, input,
// weight) with one output per needed gradient, the bias's being [Cout] (bias_sizes).
void RecordConvolution(Tape& tape, V out, V x, V weight, V bias) {
  const Shape xs = tape.shape(x), ws = tape.shape(weight), bias_shape = {tape.shape(out)[1]};
  tape.Record({out}, {x, weight, bias},
              [x, weight, xs, ws, bias_shape](Tape& t, const std::vector<V>& g,
                                              const std::vector<bool>& need) {
                const DType dt = t.dtype(g[0]);
                return EmitMasked(t, "aten.convolution_backward", {g[0], x, weight}, need,
                                  {{xs, dt}, {ws, dt}, {bias_shape, dt}});
              });
}

}  // namespace

V Ops::Conv2d(V x, V weight, V bias, Conv conv) {
  const Shape xs = t_.shape(x), ws = t_.shape(weight);
  const std::int64_t h = (xs[2] + 2 * conv.padding - ws[2]) / conv.stride + 1;
  const std::int64_t w = (xs[3] + 2 * conv.padding - ws[3]) / conv.stride + 1;
  V out = t_.Emit1("aten.convolution", {x, weight, bias}, {xs[0], ws[0], h, w}, t_.dtype(x));
  RecordConvolution(t_, out, x, weight, bias);
  return out;
}

V Ops::ConvTranspose2d(V x, V weight, V bias, Conv conv) {
  const Shape xs = t_.shape(x), ws = t_.shape(weight);
  const std::int64_t h = (xs[2] - 1) * conv.stride - 2 * conv.padding + ws[2];
  const std::int64_t w = (xs[3] - 1) * conv.stride - 2 * conv.padding + ws[3];
  const std::int64_t out_channels = ws[1] * conv.groups;
  V out = t_.Emit1("aten.convolution", {x, weight, bias}, {xs[0], out_channels, h, w}, t_.dtype(x));
  RecordConvolution(t_, out, x, weight, bias);
  return out;
}

V Ops::BatchNorm(V x, V weight, V bias, V running_mean, V running_var, V num_batches_tracked) {
  t_.EmitInPlace("aten.add_", num_batches_tracked, {});
  t_.Emit1("aten.empty", {}, {0}, DType::kUInt8);  // the reserve of _batch_norm_impl_index
  const Shape xs = t_.shape(x);
  const Shape cs = {xs[1]};
  auto outs = t_.Emit(
      "aten.native_batch_norm", {x, weight, bias, running_mean, running_var},
      {Tape::Out{xs, t_.dtype(x)}, Tape::Out{cs, DType::kFloat32}, Tape::Out{cs, DType::kFloat32}});
  const V save_mean = outs[1], save_invstd = outs[2];
  t_.Record({outs[0]}, {x, weight, bias},
            [=](Tape& t, const std::vector<V>& g, const std::vector<bool>& need) {
              const DType dt = t.dtype(g[0]);
              return EmitMasked(
                  t, "aten.native_batch_norm_backward",
                  {g[0], x, weight, running_mean, running_var, save_mean, save_invstd}, need,
                  {{xs, dt}, {cs, dt}, {cs, dt}});
            });
  return outs[0];
}

Ops::Pooled Ops::MaxPool2dWithIndices(V x, std::int64_t kernel, std::int64_t stride,
                                      std::int64_t padding) {
  const Shape xs = t_.shape(x);
  const std::int64_t h = (xs[2] + 2 * padding - kernel) / stride + 1;
  const std::int64_t w = (xs[3] + 2 * padding - kernel) / stride + 1;
  const Shape os = {xs[0], xs[1], h, w};
  auto outs = t_.Emit("aten.max_pool2d_with_indices", {x},
                      {Tape::Out{os, t_.dtype(x)}, Tape::Out{os, DType::kInt64}});
  const V indices = outs[1];
  t_.Record({outs[0]}, {x},
            [x, indices](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
              return std::vector<V>{t.Emit1("aten.max_pool2d_with_indices_backward",
                                            {g[0], x, indices}, t.shape(x), t.dtype(g[0]))};
            });
  return {outs[0], indices};
}

V Ops::MaxUnpool2d(V x, V indices, std::int64_t out_h, std::int64_t out_w) {
  const Shape xs = t_.shape(x);
  if (t_.shape(indices) != xs) Bug("max_unpool2d with indices of another shape");
  V out = t_.Emit1("aten.max_unpool2d", {x, indices}, {xs[0], xs[1], out_h, out_w}, t_.dtype(x));
  t_.Record(
      {out}, {x}, [this, indices, xs](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
        auto flatten = [&](V v) {
          const Shape s = t.shape(v);  // a copy: the view grows the tape
          return View(v, {s[0], s[1], s[2] * s[3]});
        };
        const V index_view = flatten(indices);
        const V grad_view = flatten(Contiguous(g[0]));
        const V gathered =
            t.Emit1("aten.gather", {grad_view, index_view}, t.shape(index_view), t.dtype(g[0]));
        return std::vector<V>{View(gathered, xs)};
      });
  return out;
}

V Ops::AdaptiveAvgPool2d(V x, std::int64_t out_h, std::int64_t out_w) {
  if (out_h == 1 && out_w == 1) return Mean(x, {-1, -2});
  const Shape xs = t_.shape(x);
  V out = t_.Emit1("aten._adaptive_avg_pool2d", {x}, {xs[0], xs[1], out_h, out_w}, t_.dtype(x));
  t_.Record({out}, {x}, [x](Tape& t, const std::vector<V>& g, const std::vector<bool>&) {
    return std::vector<V>{
        t.Emit1("aten._adaptive_avg_pool2d_backward", {g[0], x}, t.shape(x), t.dtype(g[0]))};
  });
  return out;
}

}  // namespace roam::gen
