#include "gen/config.h"

#include <algorithm>

namespace roam::gen {
namespace {

// Keys each family reads, beyond the ones every family has.
const std::vector<std::string> kCommonModelKeys = {"family", "name", "batch", "dtype", "device"};
const std::vector<std::string> kTransformerKeys = {"n_layer", "n_embd", "n_head", "n_inner",
                                                   "dropout"};

}  // namespace

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
    case Family::kFcn8:
      add({"image_size", "num_classes", "dropout"});
      break;
    case Family::kSegnet:
    case Family::kUnet:
      add({"image_size", "num_classes"});
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
  for (const auto& f : kFamilyNames)
    for (const std::string& k : FamilyKeys(f.value))
      if (std::find(all.begin(), all.end(), k) == all.end()) all.push_back(k);
  return all;
}

std::string_view ToString(Family family) {
  for (const auto& f : kFamilyNames)
    if (f.value == family) return f.name;
  return "";
}

std::string_view ToString(Attention attention) {
  for (const auto& a : kAttentionNames)
    if (a.value == attention) return a.name;
  return "";
}

std::string_view ToString(Precision precision) {
  for (const auto& p : kPrecisionNames)
    if (p.value == precision) return p.name;
  return "";
}

std::string_view ToString(OptimizerKind kind) {
  for (const auto& o : kOptimizerNames)
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
    case Family::kFcn8:  // PASCAL VOC's 21 classes, the FCN paper's benchmark
    case Family::kSegnet:
    case Family::kUnet:
      m.num_classes = 21;
      m.dropout = family == Family::kFcn8 ? 0.5 : 0.0;
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

}  // namespace roam::gen
