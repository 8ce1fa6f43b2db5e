// The model and training sections of a config (docs/configs.md): gen::ModelConfig and
// gen::TrainingConfig, whose keys and defaults depend on the family and the optimizer (a key
// of another family is refused as not applying), then the checks across keys.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <string>
#include <vector>

#include "config/sections.h"

namespace roam::config {

using gen::Attention;
using gen::Family;
using gen::ModelConfig;
using gen::OptimizerKind;
using gen::Precision;
using gen::TrainingConfig;

namespace {

constexpr gen::EnumName<gen::DType> kDTypes[] = {{gen::DType::kFloat32, "float32"},
                                                 {gen::DType::kFloat16, "float16"},
                                                 {gen::DType::kBFloat16, "bfloat16"}};
constexpr gen::EnumName<gen::Device> kDevices[] = {{gen::Device::kCuda, "cuda"},
                                                   {gen::Device::kCpu, "cpu"}};

const std::vector<std::string> kTrainingKeys = {"optimizer", "lr",           "momentum",
                                                "nesterov",  "weight_decay", "beta1",
                                                "beta2",     "eps",          "precision"};
// Channel counts scale with width_mult; beyond this a network's width is no longer a
// MobileNetV2 (and the double-to-integer channel arithmetic would leave its range).
constexpr int kMaxWidthMult = 1024;

}  // namespace

void ReadModel(const Reader& r, const YAML::Node& node, ModelConfig& m) {
  YAML::Node family = node["family"];
  if (!family.IsDefined() || family.IsNull())
    r.Fail("model.family", YAML::Node(), "is missing; expected " + Choices(gen::kFamilyNames));
  m = gen::ModelDefaults(r.Choice(family, "model.family", gen::kFamilyNames));
  const std::vector<std::string> allowed = gen::FamilyKeys(m.family);
  r.CheckKeys(node, "model", allowed, gen::AllModelKeys(),
              "does not apply to family " + std::string(gen::ToString(m.family)));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string path = "model." + key;
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    if (key == "family") continue;
    if (key == "name")
      m.name = r.Scalar(v, path, "a string");
    else if (key == "batch")
      m.batch = r.Integer(v, path, 1);
    else if (key == "dtype")
      m.dtype = r.Choice(v, path, kDTypes);
    else if (key == "device")
      m.device = r.Choice(v, path, kDevices);
    else if (key == "n_layer")
      m.n_layer = r.Integer(v, path, 1);
    else if (key == "n_embd")
      m.n_embd = r.Integer(v, path, 1);
    else if (key == "n_head")
      m.n_head = r.Integer(v, path, 1);
    else if (key == "n_inner")
      m.n_inner = r.Integer(v, path, 0);
    else if (key == "n_kv_head")
      m.n_kv_head = r.Integer(v, path, 0);
    else if (key == "attention")
      m.attention = r.Choice(v, path, gen::kAttentionNames);
    else if (key == "dropout") {
      m.dropout = r.Number(v, path);
      if (m.dropout < 0.0 || m.dropout >= 1.0)
        r.Fail(path, v, "must be in [0, 1), got " + v.Scalar());
    } else if (key == "seq_len")
      m.seq_len = r.Integer(v, path, 1);
    else if (key == "vocab")
      m.vocab = r.Integer(v, path, 1);
    else if (key == "n_positions")
      m.n_positions = r.Integer(v, path, 1);
    else if (key == "tie_embeddings")
      m.tie_embeddings = r.Bool(v, path);
    else if (key == "type_vocab")
      m.type_vocab = r.Integer(v, path, 1);
    else if (key == "image_size")
      m.image_size = r.Integer(v, path, 1);
    else if (key == "num_classes")
      m.num_classes = r.Integer(v, path, 1);
    else if (key == "patch_size")
      m.patch_size = r.Integer(v, path, 1);
    else if (key == "depth")
      m.depth = r.Integer(v, path, 1);
    else if (key == "batch_norm")
      m.batch_norm = r.Bool(v, path);
    else if (key == "width_mult") {
      m.width_mult = r.Number(v, path);
      if (m.width_mult <= 0.0) r.Fail(path, v, "must be positive, got " + v.Scalar());
      if (m.width_mult > kMaxWidthMult)
        r.Fail(path, v, "must be at most " + std::to_string(kMaxWidthMult) + ", got " + v.Scalar());
    }
  }

  const bool transformer = m.family == Family::kGpt2 || m.family == Family::kBert ||
                           m.family == Family::kVit || m.family == Family::kLlama;
  if (transformer && m.n_embd % m.n_head != 0)
    r.Fail("model.n_embd", node["n_embd"],
           std::to_string(m.n_embd) + " is not divisible by model.n_head (" +
               std::to_string(m.n_head) + ")");
  if (m.family == Family::kLlama) {
    if (m.n_kv_head == 0) m.n_kv_head = m.n_head;
    if (m.n_head % m.n_kv_head != 0)
      r.Fail("model.n_kv_head", node["n_kv_head"],
             "model.n_head (" + std::to_string(m.n_head) + ") is not divisible by " +
                 std::to_string(m.n_kv_head) + ": each key/value head serves a whole group");
    if ((m.n_embd / m.n_head) % 2 != 0)
      r.Fail("model.n_head", node["n_head"],
             "the head width n_embd / n_head = " + std::to_string(m.n_embd / m.n_head) +
                 " must be even: the rotary embedding rotates pairs");
  }
  const bool token =
      m.family == Family::kGpt2 || m.family == Family::kBert || m.family == Family::kLlama;
  if (token && m.seq_len > m.n_positions)
    r.Fail("model.seq_len", node["seq_len"],
           std::to_string(m.seq_len) + " exceeds model.n_positions (" +
               std::to_string(m.n_positions) + ")");
  if (m.family == Family::kVit && m.image_size % m.patch_size != 0)
    r.Fail("model.image_size", node["image_size"],
           std::to_string(m.image_size) + " is not a multiple of model.patch_size (" +
               std::to_string(m.patch_size) + ")");
  auto check_depth = [&](std::initializer_list<std::int64_t> valid) {
    std::string list;
    for (std::int64_t d : valid) {
      if (d == m.depth) return;
      list += (list.empty() ? "" : ", ") + std::to_string(d);
    }
    r.Fail("model.depth", node["depth"],
           "is " + std::to_string(m.depth) + ", expected one of " + list);
  };
  if (m.family == Family::kResnet) check_depth({18, 34, 50, 101, 152});
  if (m.family == Family::kVgg) check_depth({11, 13, 16, 19});
  // Below these sizes a pooling layer would produce an empty feature map.
  const bool five_pools =
      m.family == Family::kVgg || m.family == Family::kFcn8 || m.family == Family::kSegnet;
  const std::int64_t min_image = five_pools                     ? 32
                                 : m.family == Family::kAlexnet ? 63
                                 : m.family == Family::kUnet    ? 16
                                                                : 1;
  // U-Net's skips meet the upsampled maps only when four halvings are exact.
  if (m.family == Family::kUnet && m.image_size >= min_image && m.image_size % 16 != 0)
    r.Fail("model.image_size", node["image_size"],
           std::to_string(m.image_size) +
               " is not a multiple of 16: unet halves it four times and concatenates each skip "
               "with its upsampled map");
  if (m.image_size < min_image)
    r.Fail("model.image_size", node["image_size"],
           std::to_string(m.image_size) + " is too small for " +
               std::string(gen::ToString(m.family)) + " (at least " + std::to_string(min_image) +
               ")");
}

void ReadTraining(const Reader& r, const YAML::Node& node, const ModelConfig& m,
                  TrainingConfig& t) {
  OptimizerKind kind = OptimizerKind::kAdam;
  if (YAML::Node o = node["optimizer"]; o.IsDefined() && !o.IsNull())
    kind = r.Choice(o, "training.optimizer", gen::kOptimizerNames);
  t = gen::TrainingDefaults(kind);
  if (m.family == Family::kLlama) t.precision = Precision::kBf16Mixed;
  std::vector<std::string> allowed = {"optimizer", "lr", "weight_decay", "precision"};
  if (kind == OptimizerKind::kSgd)
    allowed.insert(allowed.end(), {"momentum", "nesterov"});
  else
    allowed.insert(allowed.end(), {"beta1", "beta2", "eps"});
  r.CheckKeys(node, "training", allowed, kTrainingKeys,
              "does not apply to optimizer " + std::string(gen::ToString(kind)));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string key = it->first.Scalar();
    const std::string path = "training." + key;
    const YAML::Node v = it->second;  // a copy: the iterator yields temporaries
    auto beta = [&](double x) {
      if (x < 0.0 || x >= 1.0) r.Fail(path, v, "must be in [0, 1), got " + v.Scalar());
      return x;
    };
    if (key == "optimizer") continue;
    if (key == "lr") {
      t.lr = r.Number(v, path);
      if (t.lr <= 0.0) r.Fail(path, v, "must be positive, got " + v.Scalar());
    } else if (key == "momentum")
      t.momentum = r.NonNegative(v, path);
    else if (key == "nesterov")
      t.nesterov = r.Bool(v, path);
    else if (key == "weight_decay")
      t.weight_decay = r.NonNegative(v, path);
    else if (key == "precision")
      t.precision = r.Choice(v, path, gen::kPrecisionNames);
    else if (key == "beta1")
      t.beta1 = beta(r.Number(v, path));
    else if (key == "beta2")
      t.beta2 = beta(r.Number(v, path));
    else if (key == "eps") {
      t.eps = r.Number(v, path);
      if (t.eps <= 0.0) r.Fail(path, v, "must be positive, got " + v.Scalar());
    }
  }
  if (t.nesterov && t.momentum <= 0.0)
    r.Fail("training.nesterov", node["nesterov"], "needs a positive training.momentum");
  if (t.precision != Precision::kFp32 && m.family != Family::kLlama)
    r.Fail("training.precision", node["precision"],
           std::string(gen::ToString(t.precision)) + " is modelled for family llama only (family " +
               std::string(gen::ToString(m.family)) + " trains in fp32 or in model.dtype)");
  if (t.precision != Precision::kFp32 && m.dtype != gen::DType::kFloat32)
    r.Fail("training.precision", node["precision"],
           std::string(gen::ToString(t.precision)) +
               " keeps float32 master weights: model.dtype must be float32, not " +
               std::string(gen::ToString(m.dtype)));
}

}  // namespace roam::config
