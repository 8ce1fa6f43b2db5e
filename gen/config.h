// What the generators build (docs/configs.md, "model" and "training"): the model and the
// training step around it, with each family's defaults. Reading them from YAML is config/'s
// (config/config.h), which also holds the planner's and remat's settings.
//
// In: nothing but core's types. Out: plain structs and the tables naming their enums.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/types.h"
#include "gen/aten.h"
#include "gen/builder.h"

namespace roam::gen {

// An enum's names as configs spell them (the readers' and printers' one table).
template <typename Enum>
struct EnumName {
  Enum value;
  std::string_view name;
};

enum class Family {
  kGpt2,
  kBert,
  kVit,
  kResnet,
  kVgg,
  kAlexnet,
  kMobilenetV2,
  kLlama,
  kFcn8,
  kSegnet,
  kUnet
};
std::string_view ToString(Family family);
inline constexpr EnumName<Family> kFamilyNames[] = {
    {Family::kGpt2, "gpt2"},
    {Family::kBert, "bert"},
    {Family::kVit, "vit"},
    {Family::kResnet, "resnet"},
    {Family::kVgg, "vgg"},
    {Family::kAlexnet, "alexnet"},
    {Family::kMobilenetV2, "mobilenet_v2"},
    {Family::kLlama, "llama"},
    {Family::kFcn8, "fcn8"},
    {Family::kSegnet, "segnet"},
    {Family::kUnet, "unet"},
};

enum class OptimizerKind { kSgd, kAdam, kAdamW };
std::string_view ToString(OptimizerKind kind);
inline constexpr EnumName<OptimizerKind> kOptimizerNames[] = {
    {OptimizerKind::kSgd, "sgd"}, {OptimizerKind::kAdam, "adam"}, {OptimizerKind::kAdamW, "adamw"}};

// llama's attention: one fused flash-attention op, or the unfused ops of Meta's reference.
enum class Attention { kSdpa, kMath };
std::string_view ToString(Attention attention);
inline constexpr EnumName<Attention> kAttentionNames[] = {{Attention::kSdpa, "sdpa"},
                                                          {Attention::kMath, "math"}};

// fp32: every tensor in model.dtype. bf16-mixed: torch.autocast(dtype=bfloat16) around the
// forward pass and the loss, with float32 weights (the master copy), gradients and optimizer.
// bf16-master: the model itself in bfloat16 (weights, activations, gradients), a float32 master
// copy of every weight in the optimizer, as Megatron-LM, DeepSpeed and FSDP's MixedPrecision
// train LLaMA-scale models: each gradient is cast to float32, the optimizer updates the master
// and the master is copied back into the bfloat16 weight.
enum class Precision { kFp32, kBf16Mixed, kBf16Master };
std::string_view ToString(Precision precision);
inline constexpr EnumName<Precision> kPrecisionNames[] = {{Precision::kFp32, "fp32"},
                                                          {Precision::kBf16Mixed, "bf16-mixed"},
                                                          {Precision::kBf16Master, "bf16-master"}};

// The network. Which keys a family reads is listed in docs/configs.md; a key that does not
// apply to the chosen family is rejected. Defaults that depend on the family are filled by
// ModelDefaults().
struct ModelConfig {
  Family family = Family::kGpt2;
  std::string name;  // graph name; empty = derived from the config file name
  std::int64_t batch = 1;
  DType dtype = DType::kFloat32;  // parameters, activations, gradients, optimizer state
  Device device = Device::kCuda;  // decides how dropout lowers (see gen/aten.h)

  // Transformers (gpt2, bert, vit, llama).
  std::int64_t n_layer = 12;
  std::int64_t n_embd = 768;
  std::int64_t n_head = 12;
  std::int64_t n_inner = 0;  // MLP hidden width; 0 = 4 * n_embd
  double dropout = 0.1;      // also the classifier dropout of vgg, alexnet, mobilenet_v2, fcn8

  // llama: grouped-query attention's key/value heads (0 = n_head) and the attention kernel.
  std::int64_t n_kv_head = 0;
  Attention attention = Attention::kSdpa;

  // Token models (gpt2, bert, llama).
  std::int64_t seq_len = 1024;
  std::int64_t vocab = 50257;
  std::int64_t n_positions = 1024;  // rows of the position embedding; seq_len <= n_positions
  bool tie_embeddings = true;       // gpt2: the LM head reuses the token embedding
  std::int64_t type_vocab = 2;      // bert: token type embedding rows

  // Image models (vit, the CNNs and the segmentation networks, whose num_classes is per pixel).
  std::int64_t image_size = 224;
  std::int64_t num_classes = 1000;
  std::int64_t patch_size = 16;  // vit
  std::int64_t depth = 18;       // resnet: 18/34/50/101/152; vgg: 11/13/16/19
  bool batch_norm = false;       // vgg: the _bn variants
  double width_mult = 1.0;       // mobilenet_v2
};

// The defaults of every key for one family (e.g. bert: vocab 30522, n_positions 512).
ModelConfig ModelDefaults(Family family);

// The model keys family reads ("batch", "n_layer", ...), in docs order; AllModelKeys: those
// of any family (a key of another family is refused as not applying).
std::vector<std::string> FamilyKeys(Family family);
std::vector<std::string> AllModelKeys();

// The integer keys family model.family reads, as ("model.batch", value), in docs order: what
// a message about a too-large tensor matches the tensor's dimensions against.
std::vector<std::pair<std::string, std::int64_t>> IntegerModelKeys(const ModelConfig& model);

// torch.optim with foreach=False. lr, betas and eps do not change the graph; they are checked
// and kept so a config states the whole training step.
struct TrainingConfig {
  OptimizerKind optimizer = OptimizerKind::kAdam;
  double lr = 1e-3;
  double momentum = 0.0;      // sgd; non-zero adds a momentum buffer per parameter
  bool nesterov = false;      // sgd
  double weight_decay = 0.0;  // sgd/adam: an extra add per parameter; adamw: decoupled mul_
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  // The config loader's default is family-dependent (bf16-mixed for llama); the generator
  // models bf16-mixed for llama only.
  Precision precision = Precision::kFp32;
};
// adamw's weight_decay defaults to 0.01 as in torch.optim.AdamW.
TrainingConfig TrainingDefaults(OptimizerKind kind);

// A generated graph's model and training step (a config file's model and training sections).
struct Config {
  std::string source;  // the file (or "<text>") it came from
  ModelConfig model;
  TrainingConfig training;
};

}  // namespace roam::gen
