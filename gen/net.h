// The pieces every model generator shares (internal to gen/): a module's parameters in
// registration order with the tape and ops, the layers' parameter structs, and the training
// step's end (loss.backward(); optimizer.step()).
#pragma once

#include <cstdint>
#include <vector>

#include "gen/aten.h"
#include "gen/builder.h"
#include "gen/config.h"
#include "gen/optim.h"

namespace roam::gen {

// Parameters in registration order (what model.parameters() yields), plus the tape and ops.
class Net {
 public:
  explicit Net(const ModelConfig& m) : tape(m.name), ops(tape, m.device), dtype(m.dtype) {}

  V Param(const Shape& shape) {
    V v = tape.Input(shape, dtype, TensorKind::kWeight, /*parameter=*/true);
    params.push_back(v);
    return v;
  }
  V Buffer(const Shape& shape, DType dt) { return tape.Input(shape, dt, TensorKind::kInput); }

  Tape tape;
  Ops ops;
  DType dtype;
  std::vector<V> params;
};

struct LinearP {
  V w = kNone, b = kNone;
};
inline LinearP MakeLinear(Net& n, std::int64_t in, std::int64_t out, bool bias = true) {
  LinearP l;
  l.w = n.Param({out, in});
  if (bias) l.b = n.Param({out});
  return l;
}

struct NormP {
  V w = kNone, b = kNone;
};
inline NormP MakeLayerNorm(Net& n, std::int64_t d) { return {n.Param({d}), n.Param({d})}; }

struct BatchNormP {
  V w = kNone, b = kNone, mean = kNone, var = kNone, count = kNone;
};
inline BatchNormP MakeBatchNorm(Net& n, std::int64_t c) {
  BatchNormP bn;
  bn.w = n.Param({c});
  bn.b = n.Param({c});
  bn.mean = n.Buffer({c}, n.dtype);
  bn.var = n.Buffer({c}, n.dtype);
  bn.count = n.Buffer({}, DType::kInt64);
  return bn;
}
inline V ApplyBatchNorm(Net& n, const BatchNormP& bn, V x) {
  return n.ops.BatchNorm(x, bn.w, bn.b, bn.mean, bn.var, bn.count);
}

struct ConvP {
  V w = kNone, b = kNone;
  Ops::Conv conv;
  bool transposed = false;
};
inline ConvP MakeConv(Net& n, std::int64_t in, std::int64_t out, std::int64_t kernel,
                      std::int64_t stride, std::int64_t padding, bool bias,
                      std::int64_t groups = 1) {
  ConvP c;
  c.w = n.Param({out, in / groups, kernel, kernel});
  if (bias) c.b = n.Param({out});
  c.conv = {stride, padding, groups};
  return c;
}
// nn.ConvTranspose2d's weight is [in, out / groups, k, k].
inline ConvP MakeConvTranspose(Net& n, std::int64_t in, std::int64_t out, std::int64_t kernel,
                               std::int64_t stride, bool bias) {
  ConvP c;
  c.w = n.Param({in, out, kernel, kernel});
  if (bias) c.b = n.Param({out});
  c.conv = {stride, 0, 1};
  c.transposed = true;
  return c;
}
inline V ApplyConv(Net& n, const ConvP& c, V x) {
  return c.transposed ? n.ops.ConvTranspose2d(x, c.w, c.b, c.conv)
                      : n.ops.Conv2d(x, c.w, c.b, c.conv);
}

// torchvision's vgg.features for depth 11/13/16/19: 3x3 convolutions (each followed by a batch
// norm in the _bn variants) with in-place ReLUs, and 2x2 max pools.
struct VggFeaturesP {
  static constexpr std::int64_t kPool = 0;
  std::vector<std::int64_t> layers;  // output channels of each convolution, kPool for a pool
  std::vector<ConvP> convs;
  std::vector<BatchNormP> norms;  // empty without batch norm
};
inline VggFeaturesP MakeVggFeatures(Net& n, std::int64_t depth, bool batch_norm) {
  constexpr std::int64_t M = VggFeaturesP::kPool;
  VggFeaturesP f;
  switch (depth) {
    case 11:
      f.layers = {64, M, 128, M, 256, 256, M, 512, 512, M, 512, 512, M};
      break;
    case 13:
      f.layers = {64, 64, M, 128, 128, M, 256, 256, M, 512, 512, M, 512, 512, M};
      break;
    case 16:
      f.layers = {64, 64, M, 128, 128, M, 256, 256, 256, M, 512, 512, 512, M, 512, 512, 512, M};
      break;
    default:
      f.layers = {64,  64,  M,   128, 128, M,   256, 256, 256, 256, M,
                  512, 512, 512, 512, M,   512, 512, 512, 512, M};
  }
  std::int64_t channels = 3;
  for (std::int64_t c : f.layers) {
    if (c == M) continue;
    f.convs.push_back(MakeConv(n, channels, c, 3, 1, 1, true));
    if (batch_norm) f.norms.push_back(MakeBatchNorm(n, c));
    channels = c;
  }
  return f;
}
// vgg.features(x); each pool's output is also appended to *pooled when given (FCN-8's skips).
inline V ApplyVggFeatures(Net& n, const VggFeaturesP& f, V x, std::vector<V>* pooled = nullptr) {
  size_t next = 0;
  for (std::int64_t c : f.layers) {
    if (c == VggFeaturesP::kPool) {
      x = n.ops.MaxPool2d(x, 2, 2, 0);
      if (pooled != nullptr) pooled->push_back(x);
      continue;
    }
    x = ApplyConv(n, f.convs[next], x);
    if (!f.norms.empty()) x = ApplyBatchNorm(n, f.norms[next], x);
    x = n.ops.ReluInPlace(x);
    ++next;
  }
  return x;
}

// Python's basic indexing `x[..., :stop]` in PyTorch 1.13: a bare `:` always emits a slice,
// while `:stop` with stop equal to the dimension's length is elided.
inline V IndexSlice(Ops& ops, V x, std::int64_t dim, std::int64_t stop = -1) {
  const std::int64_t length = ops.tape().shape(x)[static_cast<size_t>(dim)];
  if (stop == length) return x;
  return ops.Slice(x, dim, 0, stop < 0 ? length : stop);
}

// loss.backward(); optimizer.step().
inline Graph Finish(Net& n, V loss, const TrainingConfig& training) {
  n.tape.MarkOutput(loss);
  n.tape.Backward(loss);
  EmitOptimizerStep(n.tape, n.params, training);
  return n.tape.Finish();
}

}  // namespace roam::gen
