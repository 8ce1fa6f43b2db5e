#include "gen/generate.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/bytes.h"
#include "core/error.h"
#include "gen/aten.h"
#include "gen/builder.h"
#include "gen/llama.h"
#include "gen/net.h"
#include "gen/optim.h"
#include "gen/segmentation.h"

namespace roam::gen {
namespace {

// ---- GPT-2 (nanoGPT's model.py, attention without the flash path) -------------------------

Graph Gpt2(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const std::int64_t B = m.batch, T = m.seq_len, C = m.n_embd, H = m.n_head, hs = C / H;
  const std::int64_t inner = m.n_inner > 0 ? m.n_inner : 4 * C;
  struct Block {
    NormP ln_1, ln_2;
    LinearP c_attn, attn_proj, c_fc, mlp_proj;
    V mask = kNone;
  };
  const V wte = n.Param({m.vocab, C});
  const V wpe = n.Param({m.n_positions, C});
  std::vector<Block> blocks(static_cast<size_t>(m.n_layer));
  for (Block& b : blocks) {
    b.ln_1 = MakeLayerNorm(n, C);
    b.c_attn = MakeLinear(n, C, 3 * C);
    b.attn_proj = MakeLinear(n, C, C);
    b.ln_2 = MakeLayerNorm(n, C);
    b.c_fc = MakeLinear(n, C, inner);
    b.mlp_proj = MakeLinear(n, inner, C);
    b.mask = n.Buffer({1, 1, m.n_positions, m.n_positions}, m.dtype);  // the causal `bias`
  }
  const NormP ln_f = MakeLayerNorm(n, C);
  const V lm_head = m.tie_embeddings ? wte : n.Param({m.vocab, C});
  const V idx = n.Buffer({B, T}, DType::kInt64);
  const V targets = n.Buffer({B, T}, DType::kInt64);

  const V pos = n.tape.Emit1("aten.arange", {}, {T}, DType::kInt64);
  const V tok_emb = o.Embedding(wte, idx);  // C++ leaves argument order open: sequence by hand
  const V pos_emb = o.Embedding(wpe, pos);
  V x = o.Dropout(o.Add(tok_emb, pos_emb), m.dropout);
  for (const Block& b : blocks) {
    V h = o.LayerNorm(x, b.ln_1.w, b.ln_1.b);
    auto qkv = o.Split(o.Linear(h, b.c_attn.w, b.c_attn.b), C, 2);
    V k = o.Transpose(o.View(qkv[1], {B, T, H, hs}), 1, 2);
    V q = o.Transpose(o.View(qkv[0], {B, T, H, hs}), 1, 2);
    V v = o.Transpose(o.View(qkv[2], {B, T, H, hs}), 1, 2);
    V att = o.MulScalar(o.Matmul(q, o.Transpose(k, -2, -1)));
    // self.bias[:, :, :T, :T]
    V mask = IndexSlice(o, IndexSlice(o, IndexSlice(o, IndexSlice(o, b.mask, 0), 1), 2, T), 3, T);
    mask = n.tape.Emit1("aten.eq", {mask}, n.tape.shape(mask), DType::kBool);
    att = o.Dropout(o.Softmax(o.MaskedFill(att, mask)), m.dropout);
    V y = o.Matmul(att, v);
    y = o.View(o.Contiguous(o.Transpose(y, 1, 2)), {B, T, C});
    x = o.Add(x, o.Dropout(o.Linear(y, b.attn_proj.w, b.attn_proj.b), m.dropout));
    h = o.LayerNorm(x, b.ln_2.w, b.ln_2.b);
    h = o.Linear(o.Gelu(o.Linear(h, b.c_fc.w, b.c_fc.b)), b.mlp_proj.w, b.mlp_proj.b);
    x = o.Add(x, o.Dropout(h, m.dropout));
  }
  x = o.LayerNorm(x, ln_f.w, ln_f.b);
  const V logits = o.View(o.Linear(x, lm_head, kNone), {B * T, m.vocab});
  V loss = o.CrossEntropy(logits, o.View(targets, {B * T}));
  return Finish(n, loss, training);
}

// ---- BERT (BertModel with a masked-LM loss through the tied word embedding) ----------------

Graph Bert(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const std::int64_t B = m.batch, T = m.seq_len, C = m.n_embd, H = m.n_head, hs = C / H;
  const std::int64_t inner = m.n_inner > 0 ? m.n_inner : 4 * C;
  const V word = n.Param({m.vocab, C});
  const V position = n.Param({m.n_positions, C});
  const V token_type = n.Param({m.type_vocab, C});
  const NormP emb_ln = MakeLayerNorm(n, C);
  struct Layer {
    LinearP query, key, value, attn_out, intermediate, output;
    NormP attn_ln, out_ln;
  };
  std::vector<Layer> layers(static_cast<size_t>(m.n_layer));
  for (Layer& l : layers) {
    l.query = MakeLinear(n, C, C);
    l.key = MakeLinear(n, C, C);
    l.value = MakeLinear(n, C, C);
    l.attn_out = MakeLinear(n, C, C);
    l.attn_ln = MakeLayerNorm(n, C);
    l.intermediate = MakeLinear(n, C, inner);
    l.output = MakeLinear(n, inner, C);
    l.out_ln = MakeLayerNorm(n, C);
  }
  const LinearP pooler = MakeLinear(n, C, C);
  const V position_ids = n.Buffer({1, m.n_positions}, DType::kInt64);
  const V token_type_ids = n.Buffer({1, m.n_positions}, DType::kInt64);
  const V input_ids = n.Buffer({B, T}, DType::kInt64);
  const V labels = n.Buffer({B, T}, DType::kInt64);

  V pos_ids = IndexSlice(o, IndexSlice(o, position_ids, 0), 1, T);
  V types = o.Expand(IndexSlice(o, IndexSlice(o, token_type_ids, 0), 1, T), {B, T});
  const V words = o.Embedding(word, input_ids);
  V x = o.Add(words, o.Embedding(token_type, types));
  x = o.AddInPlace(x, o.Embedding(position, pos_ids));
  x = o.Dropout(o.LayerNorm(x, emb_ln.w, emb_ln.b), m.dropout);
  auto heads = [&](V t) { return o.Permute(o.View(t, {B, T, H, hs}), {0, 2, 1, 3}); };
  for (const Layer& l : layers) {
    V q = o.Linear(x, l.query.w, l.query.b);
    V k = heads(o.Linear(x, l.key.w, l.key.b));
    V v = heads(o.Linear(x, l.value.w, l.value.b));
    q = heads(q);
    V scores = o.DivScalar(o.Matmul(q, o.Transpose(k, -1, -2)));
    V probs = o.Dropout(o.Softmax(scores), m.dropout);
    V ctx = o.View(o.Contiguous(o.Permute(o.Matmul(probs, v), {0, 2, 1, 3})), {B, T, C});
    V a = o.Dropout(o.Linear(ctx, l.attn_out.w, l.attn_out.b), m.dropout);
    x = o.LayerNorm(o.Add(a, x), l.attn_ln.w, l.attn_ln.b);
    V h = o.Gelu(o.Linear(x, l.intermediate.w, l.intermediate.b));
    h = o.Dropout(o.Linear(h, l.output.w, l.output.b), m.dropout);
    x = o.LayerNorm(o.Add(h, x), l.out_ln.w, l.out_ln.b);
  }
  // BertModel computes the pooled output; the MLM loss does not use it, so the pooler gets
  // no gradient and no update, as in PyTorch.
  V first = o.Select(IndexSlice(o, x, 0), 1, 0);
  o.Tanh(o.Linear(first, pooler.w, pooler.b));
  const V logits = o.View(o.Linear(x, word, kNone), {B * T, m.vocab});
  V loss = o.CrossEntropy(logits, o.View(labels, {B * T}));
  return Finish(n, loss, training);
}

// ---- ViT (torchvision 0.14 VisionTransformer, nn.MultiheadAttention) ----------------------

Graph Vit(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const std::int64_t B = m.batch, C = m.n_embd, H = m.n_head, hs = C / H;
  const std::int64_t grid = m.image_size / m.patch_size, S = MulDims(grid, grid) + 1;
  const std::int64_t inner = m.n_inner > 0 ? m.n_inner : 4 * C;
  const V class_token = n.Param({1, 1, C});
  const ConvP conv_proj = MakeConv(n, 3, C, m.patch_size, m.patch_size, 0, true);
  const V pos_embedding = n.Param({1, S, C});
  struct Layer {
    NormP ln_1, ln_2;
    V in_proj_w = kNone, in_proj_b = kNone;
    LinearP out_proj, mlp_0, mlp_3;
  };
  std::vector<Layer> layers(static_cast<size_t>(m.n_layer));
  for (Layer& l : layers) {
    l.ln_1 = MakeLayerNorm(n, C);
    l.in_proj_w = n.Param({3 * C, C});
    l.in_proj_b = n.Param({3 * C});
    l.out_proj = MakeLinear(n, C, C);
    l.ln_2 = MakeLayerNorm(n, C);
    l.mlp_0 = MakeLinear(n, C, inner);
    l.mlp_3 = MakeLinear(n, inner, C);
  }
  const NormP ln = MakeLayerNorm(n, C);
  const LinearP head = MakeLinear(n, C, m.num_classes);
  const V images = n.Buffer({B, 3, m.image_size, m.image_size}, m.dtype);
  const V labels = n.Buffer({B}, DType::kInt64);

  V x = ApplyConv(n, conv_proj, images);
  x = o.Permute(o.Reshape(x, {B, C, grid * grid}), {0, 2, 1});
  x = o.Cat({o.Expand(class_token, {B, 1, C}), x}, 1);
  x = o.Dropout(o.Add(x, pos_embedding), m.dropout);
  for (const Layer& l : layers) {
    V h = o.LayerNorm(x, l.ln_1.w, l.ln_1.b);
    h = o.Transpose(h, 1, 0);  // batch_first: [S, B, C]
    auto qkv = o.Split(o.Linear(h, l.in_proj_w, l.in_proj_b), C, -1);
    auto heads = [&](V t) { return o.Transpose(o.View(o.Contiguous(t), {S, B * H, hs}), 0, 1); };
    V q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    q = o.DivScalar(q);
    V att = o.Softmax(o.Bmm(q, o.Transpose(k, -2, -1)));
    att = o.Dropout(att, m.dropout);
    V y = o.Bmm(att, v);
    y = o.View(o.Contiguous(o.Transpose(y, 0, 1)), {S * B, C});
    y = o.View(o.Linear(y, l.out_proj.w, l.out_proj.b), {S, B, C});
    y = o.Dropout(o.Transpose(y, 1, 0), m.dropout);
    x = o.Add(y, x);
    h = o.LayerNorm(x, l.ln_2.w, l.ln_2.b);
    h = o.Dropout(o.Gelu(o.Linear(h, l.mlp_0.w, l.mlp_0.b)), m.dropout);
    h = o.Dropout(o.Linear(h, l.mlp_3.w, l.mlp_3.b), m.dropout);
    x = o.Add(x, h);
  }
  x = o.LayerNorm(x, ln.w, ln.b);
  x = o.Select(IndexSlice(o, x, 0), 1, 0);
  V loss = o.CrossEntropy(o.Linear(x, head.w, head.b), labels);
  return Finish(n, loss, training);
}

// ---- ResNet (torchvision) -------------------------------------------------------------------

Graph Resnet(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const bool bottleneck = m.depth >= 50;
  const std::int64_t expansion = bottleneck ? 4 : 1;
  std::vector<std::int64_t> counts;
  switch (m.depth) {
    case 18:
      counts = {2, 2, 2, 2};
      break;
    case 34:
      counts = {3, 4, 6, 3};
      break;
    case 50:
      counts = {3, 4, 6, 3};
      break;
    case 101:
      counts = {3, 4, 23, 3};
      break;
    default:
      counts = {3, 8, 36, 3};
      break;
  }
  struct Block {
    ConvP conv1, conv2, conv3, down;
    BatchNormP bn1, bn2, bn3, down_bn;
    bool has_down = false;
  };
  const ConvP conv1 = MakeConv(n, 3, 64, 7, 2, 3, false);
  const BatchNormP bn1 = MakeBatchNorm(n, 64);
  std::vector<Block> blocks;
  std::int64_t inplanes = 64;
  for (size_t stage = 0; stage < 4; ++stage) {
    const std::int64_t planes = 64 << stage;
    for (std::int64_t i = 0; i < counts[stage]; ++i) {
      const std::int64_t stride = (stage > 0 && i == 0) ? 2 : 1;
      Block b;
      if (bottleneck) {
        b.conv1 = MakeConv(n, inplanes, planes, 1, 1, 0, false);
        b.bn1 = MakeBatchNorm(n, planes);
        b.conv2 = MakeConv(n, planes, planes, 3, stride, 1, false);
        b.bn2 = MakeBatchNorm(n, planes);
        b.conv3 = MakeConv(n, planes, planes * expansion, 1, 1, 0, false);
        b.bn3 = MakeBatchNorm(n, planes * expansion);
      } else {
        b.conv1 = MakeConv(n, inplanes, planes, 3, stride, 1, false);
        b.bn1 = MakeBatchNorm(n, planes);
        b.conv2 = MakeConv(n, planes, planes, 3, 1, 1, false);
        b.bn2 = MakeBatchNorm(n, planes);
      }
      if (stride != 1 || inplanes != planes * expansion) {
        b.has_down = true;
        b.down = MakeConv(n, inplanes, planes * expansion, 1, stride, 0, false);
        b.down_bn = MakeBatchNorm(n, planes * expansion);
      }
      inplanes = planes * expansion;
      blocks.push_back(b);
    }
  }
  const LinearP fc = MakeLinear(n, 512 * expansion, m.num_classes);
  const V images = n.Buffer({m.batch, 3, m.image_size, m.image_size}, m.dtype);
  const V labels = n.Buffer({m.batch}, DType::kInt64);

  V x = o.ReluInPlace(ApplyBatchNorm(n, bn1, ApplyConv(n, conv1, images)));
  x = o.MaxPool2d(x, 3, 2, 1);
  for (const Block& b : blocks) {
    V identity = x;
    V out = o.ReluInPlace(ApplyBatchNorm(n, b.bn1, ApplyConv(n, b.conv1, x)));
    out = ApplyBatchNorm(n, b.bn2, ApplyConv(n, b.conv2, out));
    if (bottleneck) out = ApplyBatchNorm(n, b.bn3, ApplyConv(n, b.conv3, o.ReluInPlace(out)));
    if (b.has_down) identity = ApplyBatchNorm(n, b.down_bn, ApplyConv(n, b.down, x));
    x = o.ReluInPlace(o.AddInPlace(out, identity));
  }
  x = o.AdaptiveAvgPool2d(x, 1, 1);
  x = o.Reshape(x, {m.batch, 512 * expansion});
  V loss = o.CrossEntropy(o.Linear(x, fc.w, fc.b), labels);
  return Finish(n, loss, training);
}

// ---- VGG and AlexNet (torchvision) --------------------------------------------------------

struct ClassifierP {
  LinearP fc1, fc2, fc3;
};
// Dropout, Linear, ReLU, Dropout, Linear, ReLU, Linear (AlexNet) or Linear, ReLU, Dropout,
// Linear, ReLU, Dropout, Linear (VGG).
V Classifier(Net& n, const ClassifierP& c, V x, double p, bool dropout_first) {
  Ops& o = n.ops;
  if (dropout_first) x = o.Dropout(x, p);
  x = o.ReluInPlace(o.Linear(x, c.fc1.w, c.fc1.b));
  x = o.Dropout(x, p);
  x = o.ReluInPlace(o.Linear(x, c.fc2.w, c.fc2.b));
  if (!dropout_first) x = o.Dropout(x, p);
  return o.Linear(x, c.fc3.w, c.fc3.b);
}

Graph Vgg(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const VggFeaturesP features = MakeVggFeatures(n, m.depth, m.batch_norm);
  ClassifierP cls{MakeLinear(n, 512 * 7 * 7, 4096), MakeLinear(n, 4096, 4096),
                  MakeLinear(n, 4096, m.num_classes)};
  const V images = n.Buffer({m.batch, 3, m.image_size, m.image_size}, m.dtype);
  const V labels = n.Buffer({m.batch}, DType::kInt64);

  V x = ApplyVggFeatures(n, features, images);
  x = o.Reshape(o.AdaptiveAvgPool2d(x, 7, 7), {m.batch, 512 * 7 * 7});
  V loss = o.CrossEntropy(Classifier(n, cls, x, m.dropout, false), labels);
  return Finish(n, loss, training);
}

Graph Alexnet(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  const ConvP c1 = MakeConv(n, 3, 64, 11, 4, 2, true);
  const ConvP c2 = MakeConv(n, 64, 192, 5, 1, 2, true);
  const ConvP c3 = MakeConv(n, 192, 384, 3, 1, 1, true);
  const ConvP c4 = MakeConv(n, 384, 256, 3, 1, 1, true);
  const ConvP c5 = MakeConv(n, 256, 256, 3, 1, 1, true);
  ClassifierP cls{MakeLinear(n, 256 * 6 * 6, 4096), MakeLinear(n, 4096, 4096),
                  MakeLinear(n, 4096, m.num_classes)};
  const V images = n.Buffer({m.batch, 3, m.image_size, m.image_size}, m.dtype);
  const V labels = n.Buffer({m.batch}, DType::kInt64);

  V x = o.MaxPool2d(o.ReluInPlace(ApplyConv(n, c1, images)), 3, 2, 0);
  x = o.MaxPool2d(o.ReluInPlace(ApplyConv(n, c2, x)), 3, 2, 0);
  x = o.ReluInPlace(ApplyConv(n, c3, x));
  x = o.ReluInPlace(ApplyConv(n, c4, x));
  x = o.MaxPool2d(o.ReluInPlace(ApplyConv(n, c5, x)), 3, 2, 0);
  x = o.Reshape(o.AdaptiveAvgPool2d(x, 6, 6), {m.batch, 256 * 6 * 6});
  V loss = o.CrossEntropy(Classifier(n, cls, x, m.dropout, true), labels);
  return Finish(n, loss, training);
}

// ---- MobileNetV2 (torchvision) --------------------------------------------------------------

std::int64_t MakeDivisible(double v, std::int64_t divisor = 8) {
  std::int64_t rounded = std::max<std::int64_t>(
      divisor,
      static_cast<std::int64_t>(v + static_cast<double>(divisor) / 2.0) / divisor * divisor);
  if (static_cast<double>(rounded) < 0.9 * v) rounded += divisor;
  return rounded;
}

Graph MobilenetV2(const ModelConfig& m, const TrainingConfig& training) {
  Net n(m);
  Ops& o = n.ops;
  struct ConvBn {
    ConvP conv;
    BatchNormP bn;
    bool relu6 = true;
  };
  auto conv_bn = [&](std::int64_t in, std::int64_t out, std::int64_t k, std::int64_t stride,
                     std::int64_t groups, bool relu6) {
    ConvBn c;
    c.conv = MakeConv(n, in, out, k, stride, (k - 1) / 2, false, groups);
    c.bn = MakeBatchNorm(n, out);
    c.relu6 = relu6;
    return c;
  };
  struct Block {
    std::vector<ConvBn> layers;
    bool residual = false;
  };
  const std::int64_t settings[7][4] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                                       {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  std::int64_t input_channel = MakeDivisible(32.0 * m.width_mult);
  const std::int64_t last_channel = MakeDivisible(1280.0 * std::max(1.0, m.width_mult));
  const ConvBn stem = conv_bn(3, input_channel, 3, 2, 1, true);
  std::vector<Block> blocks;
  for (const auto& s : settings) {
    const std::int64_t out = MakeDivisible(static_cast<double>(s[1]) * m.width_mult);
    for (std::int64_t i = 0; i < s[2]; ++i) {
      const std::int64_t stride = i == 0 ? s[3] : 1;
      const std::int64_t hidden = static_cast<std::int64_t>(
          std::lround(static_cast<double>(input_channel) * static_cast<double>(s[0])));
      Block b;
      b.residual = stride == 1 && input_channel == out;
      if (s[0] != 1) b.layers.push_back(conv_bn(input_channel, hidden, 1, 1, 1, true));
      b.layers.push_back(conv_bn(hidden, hidden, 3, stride, hidden, true));
      b.layers.push_back(conv_bn(hidden, out, 1, 1, 1, false));
      blocks.push_back(std::move(b));
      input_channel = out;
    }
  }
  const ConvBn last = conv_bn(input_channel, last_channel, 1, 1, 1, true);
  const LinearP fc = MakeLinear(n, last_channel, m.num_classes);
  const V images = n.Buffer({m.batch, 3, m.image_size, m.image_size}, m.dtype);
  const V labels = n.Buffer({m.batch}, DType::kInt64);

  auto apply = [&](const ConvBn& c, V x) {
    x = ApplyBatchNorm(n, c.bn, ApplyConv(n, c.conv, x));
    return c.relu6 ? o.Relu6InPlace(x) : x;
  };
  V x = apply(stem, images);
  for (const Block& b : blocks) {
    V y = x;
    for (const ConvBn& c : b.layers) y = apply(c, y);
    x = b.residual ? o.Add(x, y) : y;
  }
  x = apply(last, x);
  x = o.Reshape(o.AdaptiveAvgPool2d(x, 1, 1), {m.batch, last_channel});
  x = o.Dropout(x, m.dropout);
  V loss = o.CrossEntropy(o.Linear(x, fc.w, fc.b), labels);
  return Finish(n, loss, training);
}

}  // namespace

Graph GenerateGraph(const ModelConfig& model, const TrainingConfig& training) {
  switch (model.family) {
    case Family::kGpt2:
      return Gpt2(model, training);
    case Family::kBert:
      return Bert(model, training);
    case Family::kVit:
      return Vit(model, training);
    case Family::kResnet:
      return Resnet(model, training);
    case Family::kVgg:
      return Vgg(model, training);
    case Family::kAlexnet:
      return Alexnet(model, training);
    case Family::kMobilenetV2:
      return MobilenetV2(model, training);
    case Family::kLlama:
      return Llama(model, training);
    case Family::kFcn8:
      return Fcn8(model, training);
    case Family::kSegnet:
      return Segnet(model, training);
    case Family::kUnet:
      return Unet(model, training);
  }
  return {};
}

Graph GenerateGraph(const Config& config) {
  const ModelConfig& m = config.model;
  try {
    // A transformer's op count is linear in n_layer (every block emits the same ops), so two
    // tiny generations predict it exactly, before a huge one takes minutes and gigabytes.
    const bool transformer = m.family == Family::kGpt2 || m.family == Family::kBert ||
                             m.family == Family::kVit || m.family == Family::kLlama;
    // Up to 256 layers the probes are not worth their cost (about 5% of GPT-2 XL's generation):
    // even at 1024 ops per layer (GPT-2's are 238) the tape's own limit stops within seconds.
    if (transformer && m.n_layer > 256) {
      ModelConfig probe = m;
      probe.n_layer = 1;
      const std::int64_t one = GenerateGraph(probe, config.training).num_ops();
      probe.n_layer = 2;
      const std::int64_t per_layer = GenerateGraph(probe, config.training).num_ops() - one;
      // n_layer <= 2^50 and per_layer is a few hundred: no overflow before the comparison.
      const std::int64_t layers_allowed = per_layer > 0 ? (kMaxGeneratedOps - one) / per_layer : 0;
      if (m.n_layer - 1 > layers_allowed) {
        const long double ops =
            static_cast<long double>(one) +
            static_cast<long double>(per_layer) * static_cast<long double>(m.n_layer - 1);
        throw InputError(config.source + ": model.n_layer: " + std::to_string(m.n_layer) +
                         " layers would generate " + std::to_string(static_cast<long long>(ops)) +
                         " ops (" + std::to_string(per_layer) +
                         " per layer), more than roam's limit of " +
                         std::to_string(kMaxGeneratedOps) + " ops (at most " +
                         std::to_string(layers_allowed + 1) + " layers here)");
      }
    }
    return GenerateGraph(m, config.training);
  } catch (const TensorTooLarge& e) {
    // The keys the tensor's dimensions come from (a dimension may be one key or the product
    // of two, like batch * seq_len); the one furthest above its family default is named as
    // responsible, the others as context.
    const auto keys = IntegerModelKeys(m);
    const auto defaults = IntegerModelKeys(ModelDefaults(m.family));
    std::vector<char> involved(keys.size(), 0);
    for (std::int64_t dim : e.dims()) {
      for (size_t i = 0; i < keys.size(); ++i) {
        if (keys[i].second <= 1) continue;
        if (keys[i].second == dim) involved[i] = 1;
        for (size_t j = 0; j < keys.size(); ++j) {
          auto product = MulBytes(keys[i].second, keys[j].second);
          if (keys[j].second > 1 && product && *product == dim) involved[i] = involved[j] = 1;
        }
      }
    }
    auto growth = [&](size_t i) {
      return static_cast<double>(keys[i].second) /
             static_cast<double>(std::max<std::int64_t>(defaults[i].second, 1));
    };
    size_t culprit = keys.size();
    for (size_t i = 0; i < keys.size(); ++i)
      if (involved[i] && (culprit == keys.size() || growth(i) > growth(culprit))) culprit = i;
    auto show = [&](size_t i) { return keys[i].first + " = " + std::to_string(keys[i].second); };
    std::string message = config.source + ": ";
    // A dimension derived otherwise (a ViT's patch grid, image_size / patch_size, squared): the
    // key furthest above its family default is named, as the likeliest cause.
    bool derived = false;
    if (culprit == keys.size())
      for (size_t i = 0; i < keys.size(); ++i)
        if (growth(i) > 1.0 && (culprit == keys.size() || growth(i) > growth(culprit))) {
          culprit = i;
          derived = true;
        }
    if (culprit == keys.size()) {
      message += "the model's sizes make a tensor too large: ";
    } else if (derived) {
      message += show(culprit) +
                 " makes a tensor too large (the key furthest above its family default; the "
                 "tensor's dimensions are derived from it): ";
    } else {
      message += show(culprit) + " makes a tensor too large";
      std::string others;
      for (size_t i = 0; i < keys.size(); ++i)
        if (involved[i] && i != culprit) others += (others.empty() ? "" : ", ") + show(i);
      if (!others.empty()) message += " (its dimensions also come from " + others + ")";
      message += ": ";
    }
    throw InputError(message + e.what());
  }
}

}  // namespace roam::gen
