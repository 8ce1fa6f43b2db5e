// The tape: PyTorch's aliasing and in-place semantics, and the autograd engine's order.
#include "gen/builder.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "core/memory_model.h"
#include "core/types.h"
#include "gen/aten.h"

namespace roam::gen {
namespace {

std::vector<std::string> Names(const Graph& g) {
  std::vector<std::string> names;
  for (OpId op : g.program_order) names.push_back(g.ops[U(op)].name);
  return names;
}

TEST(Tape, AnInPlaceWriteWaitsForEveryEarlierReaderThroughOrderingTensors) {
  Tape t("t");
  V x = t.Emit1("aten.empty", {}, {4}, DType::kFloat32);
  V view = t.EmitView("aten.view", x, {2, 2}, {2, 1});
  V a = t.Emit1("aten.neg", {view}, {2, 2}, DType::kFloat32);  // reads x through a view
  V b = t.Emit1("aten.exp", {x}, {4}, DType::kFloat32);
  V w = t.EmitInPlace("aten.relu_", x, {});
  t.Emit1("aten.sum", {w}, {}, DType::kFloat32);
  (void)a;
  (void)b;
  Graph g = t.Finish();
  const OpId write = g.tensors[U(w)].producer;
  EXPECT_EQ(g.tensors[U(w)].alias_of, x);
  std::vector<OpId> ordered_before;
  for (const Tensor& tensor : g.tensors)
    if (tensor.kind == TensorKind::kControl) {
      EXPECT_EQ(tensor.size, 0);
      EXPECT_EQ(tensor.consumers, std::vector<OpId>{write});
      ordered_before.push_back(tensor.producer);
    }
  // The view op and both readers must precede the write; the view's own producer edge is
  // not enough for the readers.
  const OpId neg = g.tensors[U(a)].producer, exp = g.tensors[U(b)].producer;
  EXPECT_NE(std::find(ordered_before.begin(), ordered_before.end(), neg), ordered_before.end());
  EXPECT_NE(std::find(ordered_before.begin(), ordered_before.end(), exp), ordered_before.end());
  const Dependencies deps = BuildDependencies(g);
  // Moving the reader after the write is no longer a valid order.
  std::vector<OpId> bad = {0, 1, 3, write, 2, 5};
  EXPECT_NE(CheckTopological(g, deps, bad), "");
}

TEST(Tape, ReadingAStaleVersionAfterAnInPlaceWriteIsAGeneratorBug) {
  Tape t("t");
  V x = t.Emit1("aten.empty", {}, {4}, DType::kFloat32);
  V view = t.EmitView("aten.view", x, {2, 2}, {2, 1});
  t.EmitInPlace("aten.relu_", x, {});
  EXPECT_THROW(t.Emit1("aten.neg", {view}, {2, 2}, DType::kFloat32), std::logic_error);
}

TEST(Tape, ViewsAndInPlaceResultsCostNoStorageOfTheirOwn) {
  Tape t("t");
  V x = t.Emit1("aten.empty", {}, {1024}, DType::kFloat32);
  V v = t.EmitView("aten.view", x, {32, 32}, {32, 1});
  V w = t.EmitInPlace("aten.relu_", v, {});
  t.Emit1("aten.sum", {w}, {}, DType::kFloat32);
  Graph g = t.Finish();
  MemoryModel m = BuildMemoryModel(g);
  EXPECT_EQ(m.storage_of[U(v)], m.storage_of[U(x)]);
  EXPECT_EQ(m.storage_of[U(w)], m.storage_of[U(x)]);
  EXPECT_EQ(m.storages[U(m.storage_of[U(x)])].size, 4096);
}

TEST(Engine, SumsTheGradientsOfATensorUsedTwiceAndStoresParamGradsThroughOneDetach) {
  Tape t("t");
  Ops o(t, Device::kCuda);
  V w = t.Input({3, 4}, DType::kFloat32, TensorKind::kWeight, /*parameter=*/true);
  V x = t.Input({2, 4}, DType::kFloat32, TensorKind::kInput);
  V y = o.Mm(x, o.T(w));  // [2, 3]
  V z = o.Add(y, y);      // y used twice
  V labels = t.Input({2}, DType::kInt64, TensorKind::kInput);
  V loss = o.CrossEntropy(z, labels);
  t.Backward(loss);
  ASSERT_NE(t.grad(w), kNone);
  Graph g = t.Finish();
  const auto names = Names(g);
  // Both of AddBackward's outputs reach MmBackward's single input slot: one aten.add sums
  // them before the mm backward runs; AccumulateGrad then detaches once. The saved
  // log_softmax output is read without a detach.
  const std::vector<std::string> backward(names.begin() + 5, names.end());
  EXPECT_EQ(backward,
            (std::vector<std::string>{"aten.ones_like", "aten.nll_loss_backward",
                                      "aten._log_softmax_backward_data", "aten.add", "aten.t",
                                      "aten.mm", "aten.t", "aten.t", "aten.detach"}));
  EXPECT_EQ(g.tensors[U(t.grad(w))].alias_of != kNoTensor, true);
}

TEST(Engine, ReducesBroadcastGradientsWithSumAndView) {
  Tape t("t");
  Ops o(t, Device::kCuda);
  V bias = t.Input({4}, DType::kFloat32, TensorKind::kWeight, true);
  V x = t.Input({2, 3, 4}, DType::kFloat32, TensorKind::kInput);
  V y = o.Add(x, bias);
  V labels = t.Input({6}, DType::kInt64, TensorKind::kInput);
  t.Backward(o.CrossEntropy(o.View(y, {6, 4}), labels));
  Graph g = t.Finish();
  const auto names = Names(g);
  auto sum = std::find(names.begin(), names.end(), "aten.sum");
  ASSERT_NE(sum, names.end());
  EXPECT_EQ(*(sum + 1), "aten.view");  // [1, 1, 4] -> [4]
  EXPECT_EQ(g.tensors[U(t.grad(bias))].size, 16);
}

TEST(Engine, RunsLaterForwardNodesFirst) {
  // Two independent branches: the engine finishes the one created last before the other.
  Tape t("t");
  Ops o(t, Device::kCuda);
  V a = t.Input({4}, DType::kFloat32, TensorKind::kWeight, true);
  V b = t.Input({4}, DType::kFloat32, TensorKind::kWeight, true);
  V ga = o.Gelu(a);
  V gb = o.Tanh(b);
  V labels = t.Input({1}, DType::kInt64, TensorKind::kInput);
  t.Backward(o.CrossEntropy(o.View(o.Add(ga, gb), {1, 4}), labels));
  const auto names = Names(t.Finish());
  auto tanh = std::find(names.begin(), names.end(), "aten.tanh_backward");
  auto gelu = std::find(names.begin(), names.end(), "aten.gelu_backward");
  ASSERT_NE(tanh, names.end());
  ASSERT_NE(gelu, names.end());
  EXPECT_LT(tanh, gelu);
}

}  // namespace
}  // namespace roam::gen
