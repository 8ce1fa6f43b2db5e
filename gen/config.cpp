#include "gen/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "core/io.h"
#include "gen/planning_config.h"
#include "gen/yaml_reader.h"

namespace roam::gen {
namespace {

using detail::Choices;
using detail::Named;
using detail::Reader;

constexpr Named<Family> kFamilies[] = {
    {Family::kGpt2, "gpt2"},
    {Family::kBert, "bert"},
    {Family::kVit, "vit"},
    {Family::kResnet, "resnet"},
    {Family::kVgg, "vgg"},
    {Family::kAlexnet, "alexnet"},
    {Family::kMobilenetV2, "mobilenet_v2"},
    {Family::kLlama, "llama"},
};
constexpr Named<Attention> kAttentions[] = {{Attention::kSdpa, "sdpa"}, {Attention::kMath, "math"}};
constexpr Named<Precision> kPrecisions[] = {{Precision::kFp32, "fp32"},
                                            {Precision::kBf16Mixed, "bf16-mixed"},
                                            {Precision::kBf16Master, "bf16-master"}};
constexpr Named<OptimizerKind> kOptimizers[] = {
    {OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdam, "adam"}, {OptimizerKind::kAdamW, "adamw"}};
constexpr Named<DType> kDTypes[] = {
    {DType::kFloat32, "float32"}, {DType::kFloat16, "float16"}, {DType::kBFloat16, "bfloat16"}};
constexpr Named<Device> kDevices[] = {{Device::kCuda, "cuda"}, {Device::kCpu, "cpu"}};

// Keys each family reads, beyond the ones every family has.
const std::vector<std::string> kCommonModelKeys = {"family", "name", "batch", "dtype", "device"};
const std::vector<std::string> kTransformerKeys = {"n_layer", "n_embd", "n_head", "n_inner",
                                                   "dropout"};

std::vector<std::string> FamilyKeys(Family family) {
  std::vector<std::string> keys = kCommonModelKeys;
  auto add = [&](std::initializer_list<const char*> more) {
    keys.insert(keys.end(), more.begin(), more.end());
  };
  switch (family) {
    case Family::kGpt2:
      keys.insert(keys.end(), kTransformerKeys.begin(), kTransformerKeys.end());
      add({"seq_len", "vocab", "n_positions", "tie_embeddings"});
      break;
    case Family::kBert:
      keys.insert(keys.end(), kTransformerKeys.begin(), kTransformerKeys.end());
      add({"seq_len", "vocab", "n_positions", "type_vocab"});
      break;
    case Family::kVit:
      keys.insert(keys.end(), kTransformerKeys.begin(), kTransformerKeys.end());
      add({"image_size", "patch_size", "num_classes"});
      break;
    case Family::kResnet:
      add({"depth", "image_size", "num_classes"});
      break;
    case Family::kVgg:
      add({"depth", "batch_norm", "image_size", "num_classes", "dropout"});
      break;
    case Family::kAlexnet:
      add({"image_size", "num_classes", "dropout"});
      break;
    case Family::kMobilenetV2:
      add({"width_mult", "image_size", "num_classes", "dropout"});
      break;
    case Family::kLlama:  // no dropout in LLaMA
      add({"n_layer", "n_embd", "n_head", "n_kv_head", "n_inner", "attention", "seq_len", "vocab",
           "n_positions", "tie_embeddings"});
      break;
  }
  return keys;
}

std::vector<std::string> AllModelKeys() {
  std::vector<std::string> all;
  for (const auto& f : kFamilies)
    for (const std::string& k : FamilyKeys(f.value))
      if (std::find(all.begin(), all.end(), k) == all.end()) all.push_back(k);
  return all;
}

const std::vector<std::string> kSections = {"model", "training", "planner", "remat"};
const std::vector<std::string> kTrainingKeys = {"optimizer", "lr",           "momentum",
                                                "nesterov",  "weight_decay", "beta1",
                                                "beta2",     "eps",          "precision"};
// Channel counts scale with width_mult; beyond this a network's width is no longer a
// MobileNetV2 (and the double-to-integer channel arithmetic would leave its range).
constexpr int kMaxWidthMult = 1024;

void ReadModel(const Reader& r, const YAML::Node& node, ModelConfig& m) {
  YAML::Node family = node["family"];
  if (!family.IsDefined() || family.IsNull())
    r.Fail("model.family", YAML::Node(), "is missing; expected " + Choices(kFamilies));
  m = ModelDefaults(r.Choice(family, "model.family", kFamilies));
  const std::vector<std::string> allowed = FamilyKeys(m.family);
  r.CheckKeys(node, "model", allowed, AllModelKeys(),
              "does not apply to family " + std::string(ToString(m.family)));
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
      m.attention = r.Choice(v, path, kAttentions);
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
  const std::int64_t min_image = m.family == Family::kVgg       ? 32
                                 : m.family == Family::kAlexnet ? 63
                                                                : 1;
  if (m.image_size < min_image)
    r.Fail("model.image_size", node["image_size"],
           std::to_string(m.image_size) + " is too small for " + std::string(ToString(m.family)) +
               " (at least " + std::to_string(min_image) + ")");
}

void ReadTraining(const Reader& r, const YAML::Node& node, const ModelConfig& m,
                  TrainingConfig& t) {
  OptimizerKind kind = OptimizerKind::kAdam;
  if (YAML::Node o = node["optimizer"]; o.IsDefined() && !o.IsNull())
    kind = r.Choice(o, "training.optimizer", kOptimizers);
  t = TrainingDefaults(kind);
  if (m.family == Family::kLlama) t.precision = Precision::kBf16Mixed;
  std::vector<std::string> allowed = {"optimizer", "lr", "weight_decay", "precision"};
  if (kind == OptimizerKind::kSgd)
    allowed.insert(allowed.end(), {"momentum", "nesterov"});
  else
    allowed.insert(allowed.end(), {"beta1", "beta2", "eps"});
  r.CheckKeys(node, "training", allowed, kTrainingKeys,
              "does not apply to optimizer " + std::string(ToString(kind)));
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
      t.precision = r.Choice(v, path, kPrecisions);
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
           std::string(ToString(t.precision)) + " is modelled for family llama only (family " +
               std::string(ToString(m.family)) + " trains in fp32 or in model.dtype)");
  if (t.precision != Precision::kFp32 && m.dtype != DType::kFloat32)
    r.Fail("training.precision", node["precision"],
           std::string(ToString(t.precision)) +
               " keeps float32 master weights: model.dtype must be float32, not " +
               std::string(ToString(m.dtype)));
}

}  // namespace

std::string_view ToString(Family family) {
  for (const auto& f : kFamilies)
    if (f.value == family) return f.name;
  return "";
}

std::string_view ToString(Attention attention) {
  for (const auto& a : kAttentions)
    if (a.value == attention) return a.name;
  return "";
}

std::string_view ToString(Precision precision) {
  for (const auto& p : kPrecisions)
    if (p.value == precision) return p.name;
  return "";
}

std::string_view ToString(OptimizerKind kind) {
  for (const auto& o : kOptimizers)
    if (o.value == kind) return o.name;
  return "";
}

ModelConfig ModelDefaults(Family family) {
  ModelConfig m;
  m.family = family;
  switch (family) {
    case Family::kGpt2:
      break;  // GPT-2 small
    case Family::kBert:
      m.seq_len = 512;
      m.vocab = 30522;
      m.n_positions = 512;
      break;
    case Family::kVit:
      m.dropout = 0.0;  // torchvision's vit_b_16
      m.batch = 32;
      break;
    case Family::kResnet:
      m.batch = 32;
      break;
    case Family::kVgg:
      m.depth = 11;
      m.dropout = 0.5;
      m.batch = 32;
      break;
    case Family::kAlexnet:
      m.dropout = 0.5;
      m.batch = 32;
      break;
    case Family::kMobilenetV2:
      m.dropout = 0.2;
      m.batch = 32;
      break;
    case Family::kLlama:  // LLaMA-2 7B
      m.n_layer = 32;
      m.n_embd = 4096;
      m.n_head = 32;
      m.seq_len = 4096;
      m.vocab = 32000;
      m.n_positions = 4096;
      m.tie_embeddings = false;
      m.dropout = 0.0;
      break;
  }
  return m;
}

std::vector<std::pair<std::string, std::int64_t>> IntegerModelKeys(const ModelConfig& m) {
  const std::pair<const char*, std::int64_t> all[] = {{"batch", m.batch},
                                                      {"n_layer", m.n_layer},
                                                      {"n_embd", m.n_embd},
                                                      {"n_head", m.n_head},
                                                      {"n_kv_head", m.n_kv_head},
                                                      {"n_inner", m.n_inner},
                                                      {"seq_len", m.seq_len},
                                                      {"vocab", m.vocab},
                                                      {"n_positions", m.n_positions},
                                                      {"type_vocab", m.type_vocab},
                                                      {"image_size", m.image_size},
                                                      {"num_classes", m.num_classes},
                                                      {"patch_size", m.patch_size},
                                                      {"depth", m.depth}};
  const std::vector<std::string> keys = FamilyKeys(m.family);
  std::vector<std::pair<std::string, std::int64_t>> out;
  for (const auto& [key, value] : all)
    if (std::find(keys.begin(), keys.end(), key) != keys.end())
      out.emplace_back("model." + std::string(key), value);
  return out;
}

TrainingConfig TrainingDefaults(OptimizerKind kind) {
  TrainingConfig t;
  t.optimizer = kind;
  if (kind == OptimizerKind::kSgd) t.lr = 0.01;
  if (kind == OptimizerKind::kAdamW) t.weight_decay = 0.01;
  return t;
}

Config ParseConfig(std::string_view text, std::string_view source,
                   const std::vector<std::string>& overrides) {
  const std::string src(source);
  YAML::Node root = LoadYaml(text, src);
  if (root.IsNull() || !root.IsDefined()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap())
    throw InputError(
        src + ": a config must be a mapping with model, training, planner and remat sections");

  const std::map<std::string, std::string> overridden = ApplyOverrides(root, overrides);
  Reader reader(src, overridden);
  reader.CheckKeys(root, "", kSections);
  Config config;
  config.source = src;
  ReadModel(reader, reader.Section(root, "model"), config.model);
  ReadTraining(reader, reader.Section(root, "training"), config.model, config.training);
  detail::ReadPlanner(reader, reader.Section(root, "planner"), config.planner);
  detail::ReadRemat(reader, reader.Section(root, "remat"), config.remat);
  config.remat.alignment = config.planner.alignment;
  if (config.model.name.empty()) {
    std::string stem = std::filesystem::path(src).stem().string();
    config.model.name =
        stem.empty() || stem.front() == '<' ? std::string(ToString(config.model.family)) : stem;
  }
  return config;
}

Config LoadConfig(const std::string& path, const std::vector<std::string>& overrides) {
  return ParseConfig(ReadFile(path), path, overrides);
}

}  // namespace roam::gen
