#include "gen/segmentation.h"

#include <vector>

#include "gen/aten.h"
#include "gen/builder.h"
#include "gen/net.h"

namespace roam::gen {
namespace {

// Python's x[..., :h, :w].
V CropTo(Ops& o, V x, std::int64_t h, std::int64_t w) {
  return IndexSlice(o, IndexSlice(o, x, 2, h), 3, w);
}

struct ConvBnP {
  ConvP conv;
  BatchNormP bn;
};
// Conv2d(in, out, 3, padding=1), BatchNorm2d, ReLU(inplace=True).
ConvBnP MakeConvBn(Net& n, std::int64_t in, std::int64_t out, bool bias) {
  return {MakeConv(n, in, out, 3, 1, 1, bias), MakeBatchNorm(n, out)};
}
V ApplyConvBn(Net& n, const ConvBnP& c, V x) {
  return n.ops.ReluInPlace(ApplyBatchNorm(n, c.bn, ApplyConv(n, c.conv, x)));
}

// The per-pixel loss: F.cross_entropy(logits [B, K, S, S], labels [B, S, S]).
Graph FinishPerPixel(Net& n, const ModelConfig& m, V logits, const TrainingConfig& training) {
  const V labels = n.Buffer({m.batch, m.image_size, m.image_size}, DType::kInt64);
  return Finish(n, n.ops.CrossEntropy(logits, labels), training);
}

}  // namespace

Graph Fcn8(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const std::int64_t K = m.num_classes;
  const VggFeaturesP features = MakeVggFeatures(n, 16, /*batch_norm=*/false);
  const ConvP fc6 = MakeConv(n, 512, 4096, 7, 1, 3, true);
  const ConvP fc7 = MakeConv(n, 4096, 4096, 1, 1, 0, true);
  const ConvP score_fr = MakeConv(n, 4096, K, 1, 1, 0, true);
  const ConvP upscore2 = MakeConvTranspose(n, K, K, 4, 2, false);
  const ConvP score_pool4 = MakeConv(n, 512, K, 1, 1, 0, true);
  const ConvP upscore_pool4 = MakeConvTranspose(n, K, K, 4, 2, false);
  const ConvP score_pool3 = MakeConv(n, 256, K, 1, 1, 0, true);
  const ConvP upscore8 = MakeConvTranspose(n, K, K, 16, 8, false);
  const V images = n.Buffer({m.batch, 3, m.image_size, m.image_size}, m.dtype);

  std::vector<V> pooled;  // after each of VGG-16's five pools
  ApplyVggFeatures(n, features, images, &pooled);
  const V pool3 = pooled[2], pool4 = pooled[3], pool5 = pooled[4];
  V h = o.Dropout(o.ReluInPlace(ApplyConv(n, fc6, pool5)), m.dropout);
  h = o.Dropout(o.ReluInPlace(ApplyConv(n, fc7, h)), m.dropout);
  h = ApplyConv(n, upscore2, ApplyConv(n, score_fr, h));
  // Each upsampled map is at least its skip's size (2 * floor(s / 2) + 2 > s): it is the one
  // cropped.
  const V p4 = ApplyConv(n, score_pool4, pool4);
  h = o.Add(CropTo(o, h, n.tape.shape(p4)[2], n.tape.shape(p4)[3]), p4);
  h = ApplyConv(n, upscore_pool4, h);
  const V p3 = ApplyConv(n, score_pool3, pool3);
  h = o.Add(CropTo(o, h, n.tape.shape(p3)[2], n.tape.shape(p3)[3]), p3);
  h = CropTo(o, ApplyConv(n, upscore8, h), m.image_size, m.image_size);
  return FinishPerPixel(n, m, h, training);
}

Graph Segnet(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const std::vector<std::vector<std::int64_t>> encoder = {
      {64, 64}, {128, 128}, {256, 256, 256}, {512, 512, 512}, {512, 512, 512}};
  const std::vector<std::vector<std::int64_t>> decoder = {
      {512, 512, 512}, {512, 512, 256}, {256, 256, 128}, {128, 64}, {64}};
  auto make_stages = [&](const std::vector<std::vector<std::int64_t>>& widths,
                         std::int64_t& channels) {
    std::vector<std::vector<ConvBnP>> stages;
    for (const auto& stage : widths) {
      stages.emplace_back();
      for (std::int64_t c : stage) {
        stages.back().push_back(MakeConvBn(n, channels, c, true));
        channels = c;
      }
    }
    return stages;
  };
  std::int64_t channels = 3;
  const auto enc = make_stages(encoder, channels);
  const auto dec = make_stages(decoder, channels);
  const ConvP classifier = MakeConv(n, channels, m.num_classes, 3, 1, 1, true);
  const V images = n.Buffer({m.batch, 3, m.image_size, m.image_size}, m.dtype);

  struct Saved {
    V indices;
    std::int64_t h, w;  // the size before the pool, which the unpool restores
  };
  std::vector<Saved> saved;
  V x = images;
  for (const auto& stage : enc) {
    for (const ConvBnP& c : stage) x = ApplyConvBn(n, c, x);
    const Shape before = n.tape.shape(x);
    const Ops::Pooled p = o.MaxPool2dWithIndices(x, 2, 2, 0);
    saved.push_back({p.indices, before[2], before[3]});
    x = p.output;
  }
  for (const auto& stage : dec) {
    const Saved s = saved.back();
    saved.pop_back();
    x = o.MaxUnpool2d(x, s.indices, s.h, s.w);
    for (const ConvBnP& c : stage) x = ApplyConvBn(n, c, x);
  }
  return FinishPerPixel(n, m, ApplyConv(n, classifier, x), training);
}

Graph Unet(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  struct DoubleConvP {
    ConvBnP a, b;
  };
  auto double_conv = [&](std::int64_t in, std::int64_t out) {
    DoubleConvP d;
    d.a = MakeConvBn(n, in, out, false);
    d.b = MakeConvBn(n, out, out, false);
    return d;
  };
  auto apply = [&](const DoubleConvP& d, V x) {
    return ApplyConvBn(n, d.b, ApplyConvBn(n, d.a, x));
  };
  const std::int64_t ch[] = {64, 128, 256, 512, 1024};
  const DoubleConvP inc = double_conv(3, ch[0]);
  std::vector<DoubleConvP> down, up_conv;
  std::vector<ConvP> up;
  for (int i = 0; i < 4; ++i) down.push_back(double_conv(ch[i], ch[i + 1]));
  for (int i = 3; i >= 0; --i) up.push_back(MakeConvTranspose(n, ch[i + 1], ch[i], 2, 2, true));
  for (int i = 3; i >= 0; --i) up_conv.push_back(double_conv(ch[i + 1], ch[i]));
  const ConvP outc = MakeConv(n, ch[0], m.num_classes, 1, 1, 0, true);
  const V images = n.Buffer({m.batch, 3, m.image_size, m.image_size}, m.dtype);

  std::vector<V> skips = {apply(inc, images)};
  for (const DoubleConvP& d : down) skips.push_back(apply(d, o.MaxPool2d(skips.back(), 2, 2, 0)));
  V x = skips.back();
  skips.pop_back();
  for (size_t i = 0; i < up.size(); ++i) {
    const V skip = skips.back();
    skips.pop_back();
    x = apply(up_conv[i], o.Cat({skip, ApplyConv(n, up[i], x)}, 1));
  }
  return FinishPerPixel(n, m, ApplyConv(n, outc, x), training);
}

}  // namespace roam::gen
