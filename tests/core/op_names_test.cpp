#include "core/op_names.h"

#include <gtest/gtest.h>

namespace roam {
namespace {

TEST(OpBaseName, ReadsTheOpPartWithOrWithoutNamespaceAndOverload) {
  EXPECT_EQ(OpBaseName("relu_"), "relu_");
  EXPECT_EQ(OpBaseName("aten.relu_"), "relu_");
  EXPECT_EQ(OpBaseName("aten.add_.Tensor"), "add_");
  EXPECT_EQ(OpBaseName("aten.native_dropout.default"), "native_dropout");
  EXPECT_EQ(OpBaseName("torch.ops.aten.add_.Tensor"), "add_");
  EXPECT_EQ(OpBaseName(""), "");
  EXPECT_EQ(OpBaseName(".mm"), "mm");
}

TEST(IsInPlaceName, OneTrailingUnderscoreOnTheOpPartMeansInPlace) {
  for (const char* name : {"aten.relu_", "relu_", "aten.add_.Tensor", "aten.add_.Scalar",
                           "aten._foreach_add_.List", "torch.ops.aten.mul_.Tensor"})
    EXPECT_TRUE(IsInPlaceName(name)) << name;
  for (const char* name : {"aten.relu", "aten.add.Tensor", "aten.__and__.Tensor", "_",
                           "aten.native_batch_norm", "aten.convolution_backward.default", ""})
    EXPECT_FALSE(IsInPlaceName(name)) << name;
}

}  // namespace
}  // namespace roam
