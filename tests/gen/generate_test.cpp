// The generated training graphs: every shipped config, published parameter counts, sizes, and
// the memory semantics the planner relies on.
#include "gen/generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "config/config.h"
#include "core/memory_model.h"
#include "core/plan.h"
#include "core/types.h"
#include "gen/cost.h"

namespace roam::gen {
namespace {

using config::LoadConfig;
using config::ParseConfig;

namespace fs = std::filesystem;

std::string ConfigDir() { return ROAM_CONFIGS_DIR; }

Config Preset(const std::string& name, const std::vector<std::string>& overrides = {}) {
  return LoadConfig(ConfigDir() + "/" + name + ".yaml", overrides);
}

Bytes Sum(const Graph& g, TensorKind kind) {
  Bytes total = 0;
  for (const Tensor& t : g.tensors)
    if (t.producer == kNoOp && t.kind == kind) total += t.size;
  return total;
}

// Every buffer at its own offset, stacked: a layout that is valid whatever the lifetimes.
std::string ValidateWithStackedLayout(const Graph& g) {
  MemoryModel model = BuildMemoryModel(g);
  std::vector<Bytes> offsets;
  Bytes next = 0;
  for (StorageId s : model.planned) {
    offsets.push_back(next);
    next += model.storages[U(s)].size;
  }
  Plan plan = AssemblePlan(g, model, g.program_order, offsets, 0.0);
  return ValidatePlan(g, plan);
}

std::vector<std::string> ConfigFiles() {
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(ConfigDir()))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().stem().string());
  std::sort(files.begin(), files.end());
  return files;
}

class ShippedConfig : public ::testing::TestWithParam<std::string> {};

TEST_P(ShippedConfig, GeneratesAGraphWhoseProgramOrderPlansValidly) {
  const Config config = Preset(GetParam());
  const Graph g = GenerateGraph(config);
  EXPECT_EQ(g.name, GetParam());
  ASSERT_GT(g.num_ops(), 100);
  EXPECT_EQ(CheckTopological(g, BuildDependencies(g), g.program_order), "");
  EXPECT_EQ(ValidateWithStackedLayout(g), "");
  for (const Op& op : g.ops) EXPECT_NE(op.phase, Phase::kUnknown) << op.name;
  for (const Tensor& t : g.tensors) EXPECT_NE(t.kind, TensorKind::kNone) << t.ext_id;
}

INSTANTIATE_TEST_SUITE_P(Configs, ShippedConfig, ::testing::ValuesIn(ConfigFiles()),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return name;
                         });

TEST(ShippedConfigs, IncludeEveryPresetTheIssueAsksFor) {
  const auto files = ConfigFiles();
  for (const char* name :
       {"gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl", "bert-base", "bert-large", "vit-b16",
        "resnet18", "resnet50", "vgg11", "alexnet", "mobilenet_v2", "fcn8", "segnet", "unet"})
    EXPECT_NE(std::find(files.begin(), files.end(), name), files.end()) << name;
}

// fcn8, segnet and unet: the modules in tools/torch_export/roam_torch/segmentation.py at 21
// classes.
TEST(ParameterCounts, EqualThePublishedModels) {
  const std::map<std::string, Bytes> published = {
      {"gpt2-small", 124'439'808}, {"gpt2-medium", 354'823'168}, {"gpt2-large", 774'030'080},
      {"gpt2-xl", 1'557'611'200},  {"bert-base", 109'482'240},   {"bert-large", 335'141'888},
      {"vit-b16", 86'567'656},     {"resnet18", 11'689'512},     {"resnet50", 25'557'032},
      {"vgg11", 132'863'336},      {"alexnet", 61'100'840},      {"mobilenet_v2", 3'504'872},
      {"fcn8", 134'489'759},       {"segnet", 29'455'125},       {"unet", 31'038'933}};
  for (const auto& [name, count] : published) {
    const Graph g = GenerateGraph(Preset(name));
    EXPECT_EQ(Sum(g, TensorKind::kWeight) / 4, count) << name;
  }
}

TEST(ParameterCounts, ScaleWithTheDtypeAndTheOptionalVariants) {
  const Graph half = GenerateGraph(Preset("resnet18", {"model.dtype=float16"}));
  EXPECT_EQ(Sum(half, TensorKind::kWeight), 11'689'512 * 2);
  // Untied GPT-2 small has its own LM head.
  const Graph untied = GenerateGraph(Preset("gpt2-small", {"model.tie_embeddings=false"}));
  EXPECT_EQ(Sum(untied, TensorKind::kWeight) / 4, 124'439'808 + 50257 * 768);
  EXPECT_EQ(Sum(GenerateGraph(Preset("resnet18", {"model.depth=34"})), TensorKind::kWeight) / 4,
            21'797'672);
  EXPECT_EQ(Sum(GenerateGraph(Preset("resnet18", {"model.depth=152"})), TensorKind::kWeight) / 4,
            60'192'808);
  EXPECT_EQ(Sum(GenerateGraph(Preset("vgg11", {"model.depth=16", "model.batch_norm=true"})),
                TensorKind::kWeight) /
                4,
            138'365'992);
}

TEST(OptimizerState, IsTwoMomentsPerParameterForAdamWithTheStepCountersOnTheHost) {
  const Graph g = GenerateGraph(Preset("gpt2-small"));
  EXPECT_EQ(Sum(g, TensorKind::kOptimizerState), 2 * Sum(g, TensorKind::kWeight));
  int params = 0, states = 0;
  for (const Tensor& t : g.tensors) {
    if (t.producer != kNoOp) continue;
    params += t.kind == TensorKind::kWeight;
    states += t.kind == TensorKind::kOptimizerState;
  }
  EXPECT_EQ(states, 2 * params);  // no 0-dim step-counter inputs
  const Graph sgd = GenerateGraph(Preset("gpt2-small", {"training.optimizer=sgd"}));
  EXPECT_EQ(Sum(sgd, TensorKind::kOptimizerState), 0);
  const Graph momentum =
      GenerateGraph(Preset("gpt2-small", {"training.optimizer=sgd", "training.momentum=0.9"}));
  EXPECT_EQ(Sum(momentum, TensorKind::kOptimizerState), Sum(momentum, TensorKind::kWeight));
}

TEST(OpCounts, Gpt2XlWithAdamHasOverTenThousandOpsAndA96LayerGptWorks) {
  const Graph xl = GenerateGraph(Preset("gpt2-xl"));
  EXPECT_GT(xl.num_ops(), 10'000);
  const Graph deep = GenerateGraph(Preset("gpt2-xl", {"model.n_layer=96"}));
  EXPECT_GT(deep.num_ops(), 20'000);
  EXPECT_EQ(ValidateWithStackedLayout(deep), "");
}

TEST(OpCounts, AdamRunsEightDeviceOpsPerParameterTensor) {
  const Graph g = GenerateGraph(Preset("resnet18"));
  int params = 0, optimizer_ops = 0;
  for (const Tensor& t : g.tensors) params += t.producer == kNoOp && t.kind == TensorKind::kWeight;
  for (const Op& op : g.ops) optimizer_ops += op.phase == Phase::kOptimizer;
  EXPECT_EQ(optimizer_ops, 8 * params);
}

TEST(Sizes, ScaleWithBatchAndDtype) {
  auto peak = [](const Graph& g) {
    MemoryModel m = BuildMemoryModel(g, 1);
    return TheoreticalPeak(g, m, g.program_order);
  };
  const Bytes b1 = peak(GenerateGraph(Preset("resnet18", {"model.batch=1"})));
  const Bytes b4 = peak(GenerateGraph(Preset("resnet18", {"model.batch=4"})));
  EXPECT_GT(b4, b1);
  // The first convolution's output: batch x 64 x 112 x 112 floats.
  const Graph g = GenerateGraph(Preset("resnet18", {"model.batch=2"}));
  EXPECT_EQ(g.tensors[U(g.ops[U(g.program_order[0])].outputs[0])].size, 2 * 64 * 112 * 112 * 4);
  const Graph h = GenerateGraph(Preset("resnet18", {"model.batch=2", "model.dtype=bfloat16"}));
  EXPECT_EQ(h.tensors[U(h.ops[U(h.program_order[0])].outputs[0])].size, 2 * 64 * 112 * 112 * 2);
}

TEST(Phases, RunForwardThenBackwardThenOptimizerInProgramOrder) {
  for (const char* name : {"gpt2-small", "resnet18", "vit-b16"}) {
    const Graph g = GenerateGraph(Preset(name));
    int last = 0;
    for (OpId op : g.program_order) {
      const int rank = g.ops[U(op)].phase == Phase::kForward    ? 0
                       : g.ops[U(op)].phase == Phase::kBackward ? 1
                                                                : 2;
      EXPECT_GE(rank, last) << name << " op " << op;
      last = rank;
    }
    EXPECT_EQ(last, 2) << name;
  }
}

// Gradients die at their parameter's update: no storage made in the backward pass is still
// live after the first parameter update that follows its first optimizer-phase reader.
TEST(Lifetimes, EveryGradientDiesAtItsParametersUpdate) {
  for (const char* name : {"gpt2-small", "resnet50", "bert-base"}) {
    const Graph g = GenerateGraph(Preset(name));
    const MemoryModel model = BuildMemoryModel(g);
    const auto lifetimes = ComputeLifetimes(g, model, g.program_order);
    std::vector<Step> position(U(g.num_ops()));
    for (size_t s = 0; s < g.program_order.size(); ++s)
      position[U(g.program_order[s])] = static_cast<Step>(s);
    std::vector<char> is_update(U(g.num_ops()), 0);
    for (const Tensor& t : g.tensors) {
      if (t.alias_of == kNoTensor || t.producer == kNoOp) continue;
      TensorId root = t.alias_of;
      while (g.tensors[U(root)].alias_of != kNoTensor) root = g.tensors[U(root)].alias_of;
      if (g.tensors[U(root)].kind == TensorKind::kWeight &&
          g.ops[U(t.producer)].phase == Phase::kOptimizer)
        is_update[U(t.producer)] = 1;  // writes a parameter in place
    }
    int checked = 0;
    for (StorageId s : model.planned) {
      const Storage& st = model.storages[U(s)];
      const OpId producer = g.tensors[U(st.root)].producer;
      if (g.ops[U(producer)].phase != Phase::kBackward) continue;
      Step first_optimizer_read = -1;
      for (TensorId m : st.members)
        for (OpId c : g.tensors[U(m)].consumers)
          if (g.ops[U(c)].phase == Phase::kOptimizer &&
              (first_optimizer_read < 0 || position[U(c)] < first_optimizer_read))
            first_optimizer_read = position[U(c)];
      if (first_optimizer_read < 0) continue;
      Step update = first_optimizer_read;
      while (!is_update[U(g.program_order[U(update)])]) ++update;
      EXPECT_LE(lifetimes[U(s)].end, update) << name << " storage of tensor " << st.root;
      ++checked;
    }
    EXPECT_GT(checked, 100) << name;
  }
}

TEST(Aliasing, InPlaceUpdatesAndViewsShareTheirBasesStorage) {
  const Graph g = GenerateGraph(Preset("resnet18"));
  const MemoryModel model = BuildMemoryModel(g);
  int relu = 0, updates = 0, views = 0;
  for (const Op& op : g.ops) {
    if (op.name == "aten.relu_" || op.name == "aten.addcdiv_" || op.name == "aten.t") {
      // Besides its result, an op may produce size-0 ordering tensors for later writers.
      std::vector<TensorId> results;
      for (TensorId t : op.outputs)
        if (g.tensors[U(t)].kind != TensorKind::kControl) results.push_back(t);
      ASSERT_EQ(results.size(), 1u) << op.name;
      const Tensor& out = g.tensors[U(results[0])];
      ASSERT_NE(out.alias_of, kNoTensor) << op.name;
      EXPECT_EQ(model.storage_of[U(results[0])], model.storage_of[U(out.alias_of)]);
      relu += op.name == "aten.relu_";
      updates += op.name == "aten.addcdiv_";
      views += op.name == "aten.t";
    }
  }
  EXPECT_EQ(relu, 17);
  EXPECT_EQ(updates, 62);  // one per parameter tensor
  EXPECT_GT(views, 0);
}

TEST(Aliasing, CudaDropoutKeepsABoolMaskUntilItsBackward) {
  const Graph g = GenerateGraph(Preset("gpt2-small", {"model.n_layer=1"}));
  const Op* dropout = nullptr;
  for (const Op& op : g.ops)
    if (op.name == "aten.native_dropout") dropout = &op;
  ASSERT_NE(dropout, nullptr);
  ASSERT_EQ(dropout->outputs.size(), 2u);
  const Tensor& out = g.tensors[U(dropout->outputs[0])];
  const Tensor& mask = g.tensors[U(dropout->outputs[1])];
  EXPECT_EQ(mask.size * 4, out.size);
  ASSERT_EQ(mask.consumers.size(), 1u);
  EXPECT_EQ(g.ops[U(mask.consumers[0])].name, "aten.native_dropout_backward");
}

TEST(GenerateRejects, ATensorOverTheByteMaximumWithItsShapeAndDimensions) {
  ModelConfig m = ModelDefaults(Family::kGpt2);
  m.n_layer = 1;
  m.vocab = std::int64_t{1} << 45;  // the token embedding: 2^45 x 768 float32
  try {
    GenerateGraph(m, TrainingConfig{});
    FAIL() << "no error";
  } catch (const TensorTooLarge& e) {
    EXPECT_EQ(std::string(e.what()),
              "graph input 0 (weight), shape [35184372088832, 768] of float32 would take more "
              "than 1125899906842624 bytes (2^50, 1 PiB)");
    EXPECT_EQ(e.dims(), (Shape{35184372088832, 768}));
  }
}

TEST(GenerateRejects, MoreOpsThanTheLimitBeforeGeneratingThem) {
  Config config = ParseConfig("model: {family: bert, n_layer: 5000}", "deep.yaml");
  try {
    GenerateGraph(config);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("deep.yaml: model.n_layer: 5000 layers would generate ", 0), 0)
        << message;
    EXPECT_NE(message.find("more than roam's limit of 262144 ops"), std::string::npos) << message;
  }
  // The prediction is exact: a model at the limit's edge generates what it predicts.
  Config small = ParseConfig("model: {family: gpt2, n_layer: 3}", "small.yaml");
  small.model.n_layer = 1;
  const int one = GenerateGraph(small).num_ops();
  small.model.n_layer = 2;
  const int two = GenerateGraph(small).num_ops();
  small.model.n_layer = 7;
  EXPECT_EQ(GenerateGraph(small).num_ops(), one + 6 * (two - one));
}

}  // namespace
}  // namespace roam::gen

namespace roam::gen {
namespace {

TEST(GeneratedCosts, EveryOpHasOneAndViewsAreFree) {
  Graph g = GenerateGraph(ParseConfig(
      "model: {family: gpt2, n_layer: 1, n_embd: 32, n_head: 2, seq_len: 8, n_positions: 8, "
      "vocab: 50, batch: 1, device: cuda}\ntraining: {optimizer: sgd}\n",
      "<test>"));
  ASSERT_EQ(g.op_costs.size(), g.ops.size());
  int views = 0;
  for (OpId op = 0; op < g.num_ops(); ++op) {
    const Op& o = g.ops[static_cast<size_t>(op)];
    ASSERT_TRUE(g.cost(op).has_value()) << o.name;
    bool view = !o.outputs.empty() && o.name.back() != '_';
    for (TensorId t : o.outputs) {
      const Tensor& tensor = g.tensors[static_cast<size_t>(t)];
      // Size-0 ordering tensors a reader gets for a later in-place write are not outputs.
      if (tensor.kind != TensorKind::kControl) view = view && tensor.alias_of != kNoTensor;
    }
    if (view) {
      ++views;
      EXPECT_EQ(*g.cost(op), 0.0) << o.name;
    } else {
      EXPECT_GT(*g.cost(op), 0.0) << o.name;
    }
  }
  EXPECT_GT(views, 0);
}

TEST(GeneratedCosts, RooflineOfMatmulsConvolutionsAndMemoryBoundOps) {
  const Shape a = {512, 1024}, b = {1024, 2048}, out = {512, 2048};
  const CostOperand in[] = {{&a, 512 * 1024 * 4}, {&b, 1024 * 2048 * 4}};
  const CostOperand res[] = {{&out, 512 * 2048 * 4}};
  EXPECT_DOUBLE_EQ(EstimateCost("aten.mm", in, res), 2.0 * 512 * 1024 * 2048);
  // The same bytes through a memory-bound op: 100 per byte.
  EXPECT_DOUBLE_EQ(EstimateCost("aten.add", in, res),
                   100.0 * 4 * (512 * 1024 + 1024 * 2048 + 512 * 2048));
  const Shape x = {32, 64, 56, 56}, w = {64, 64, 3, 3}, y = {32, 64, 56, 56};
  const CostOperand conv_in[] = {{&x, 0}, {&w, 0}, {}};
  const CostOperand conv_out[] = {{&y, 0}};
  EXPECT_DOUBLE_EQ(EstimateCost("aten.convolution", conv_in, conv_out),
                   2.0 * 32 * 64 * 56 * 56 * 64 * 3 * 3);
}

// A transposed convolution applies its weight [Cin, Cout, k, k] at every input position: FCN-8's
// 16x16 stride-8 upsampling costs its input's positions, not its (64 times larger) output's.
TEST(GeneratedCosts, ATransposedConvolutionCountsItsInputPositions) {
  const Shape x = {2, 21, 28, 28}, w = {21, 21, 16, 16}, y = {2, 21, 232, 232};
  const CostOperand in[] = {{&x, 0}, {&w, 0}};
  const CostOperand out[] = {{&y, 0}};
  const double multiply_adds = 2.0 * 28 * 28 * 21 * 21 * 16 * 16;  // batch 2
  EXPECT_DOUBLE_EQ(EstimateCost("aten.convolution", in, out), 2.0 * multiply_adds);
  // convolution_backward(grad_out, input, weight): the input and weight gradients.
  const CostOperand back_in[] = {{&y, 0}, {&x, 0}, {&w, 0}};
  const CostOperand back_out[] = {{&x, 0}, {&w, 0}};
  EXPECT_DOUBLE_EQ(EstimateCost("aten.convolution_backward", back_in, back_out),
                   4.0 * multiply_adds);
  // U-Net's 2x2 stride-2 upsampling from 1024 to 512 channels: only the input has w[0]'s.
  const Shape ux = {1, 1024, 14, 14}, uw = {1024, 512, 2, 2}, uy = {1, 512, 28, 28};
  const CostOperand up_in[] = {{&ux, 0}, {&uw, 0}};
  const CostOperand up_out[] = {{&uy, 0}};
  EXPECT_DOUBLE_EQ(EstimateCost("aten.convolution", up_in, up_out),
                   2.0 * 14 * 14 * 1024 * 512 * 2 * 2);
}

}  // namespace
}  // namespace roam::gen
