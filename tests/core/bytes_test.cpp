// The checked arithmetic of byte counts against exact 128-bit arithmetic.
#include "core/bytes.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "core/memory_model.h"

namespace roam {
namespace {

__extension__ typedef __int128 Wide;  // exact: no product of two int64s overflows it
constexpr Bytes kMaxI64 = std::numeric_limits<Bytes>::max();

// Values around every boundary the helpers have, plus random ones.
std::vector<Bytes> Probes() {
  std::vector<Bytes> v = {0,
                          1,
                          2,
                          511,
                          512,
                          kMaxBytes,
                          kMaxBytes - 1,
                          kMaxBytes + 1,
                          kMaxBytes / 2,
                          kMaxAlignment,
                          kMaxI64,
                          -1,
                          std::numeric_limits<Bytes>::min()};
  std::mt19937_64 rng(7);
  for (int i = 0; i < 200; ++i) v.push_back(static_cast<Bytes>(rng() >> (rng() % 64)));
  return v;
}

TEST(Bytes, AddIsExactOrRefusedExactlyWhenTheSumLeavesTheRange) {
  for (Bytes a : Probes()) {
    for (Bytes b : Probes()) {
      const Wide exact = Wide{a} + Wide{b};
      const bool fits = a >= 0 && b >= 0 && a <= kMaxBytes && b <= kMaxBytes && exact <= kMaxBytes;
      auto sum = AddBytes(a, b);
      ASSERT_EQ(sum.has_value(), fits) << a << " + " << b;
      if (sum) {
        EXPECT_TRUE(Wide{*sum} == exact) << a << " + " << b;
      }
    }
  }
}

TEST(Bytes, MulIsExactOrRefusedExactlyWhenTheProductExceedsTheMaximum) {
  for (Bytes a : Probes()) {
    for (Bytes b : Probes()) {
      const Wide exact = Wide{a} * Wide{b};
      const bool fits = a >= 0 && b >= 0 && exact <= kMaxBytes;
      auto product = MulBytes(a, b);
      ASSERT_EQ(product.has_value(), fits) << a << " * " << b;
      if (product) {
        EXPECT_TRUE(Wide{*product} == exact) << a << " * " << b;
      }
    }
  }
}

TEST(Bytes, AlignUpIsTheSmallestMultipleOrRefused) {
  for (Bytes size : Probes()) {
    for (Bytes alignment : {Bytes{-1}, Bytes{0}, Bytes{1}, Bytes{2}, Bytes{512}, Bytes{3000},
                            Bytes{4096}, kMaxAlignment, kMaxAlignment + 1, kMaxI64}) {
      auto aligned = AlignUpBytes(size, alignment);
      const bool valid_args =
          size >= 0 && size <= kMaxBytes && alignment >= 1 && alignment <= kMaxAlignment;
      if (!valid_args) {
        EXPECT_FALSE(aligned.has_value()) << size << " / " << alignment;
        continue;
      }
      const Wide exact = (Wide{size} + alignment - 1) / alignment * alignment;
      ASSERT_EQ(aligned.has_value(), exact <= kMaxBytes) << size << " / " << alignment;
      if (aligned) {
        EXPECT_TRUE(Wide{*aligned} == exact) << size << " / " << alignment;
      }
    }
  }
}

TEST(Bytes, ASumSaturatesAndStaysOverflowedOnceItExceedsTheMaximum) {
  ByteSum sum;
  EXPECT_TRUE(sum.Add(kMaxBytes - 1));
  EXPECT_TRUE(sum.Add(1));
  EXPECT_EQ(sum.total(), kMaxBytes);
  EXPECT_FALSE(sum.Add(1));
  EXPECT_TRUE(sum.overflowed());
  EXPECT_FALSE(sum.Add(0));
  ByteSum negative;
  EXPECT_FALSE(negative.Add(-1));
}

TEST(Bytes, CheckLayoutRejectsBuffersEndingBeyondTheMaximumWithoutOverflowing) {
  const std::vector<Interval> intervals = {{512, 0, 1}, {512, 0, 1}};
  const std::vector<Bytes> offsets = {0, kMaxI64 - 511};
  EXPECT_EQ(CheckLayout(intervals, offsets, 1),
            "buffer 1 at offset 9223372036854775296 with size 512 ends beyond roam's maximum "
            "of 1125899906842624 bytes (2^50, 1 PiB)");
  const std::vector<Bytes> at_the_edge = {0, kMaxBytes - 512};
  EXPECT_EQ(CheckLayout(intervals, at_the_edge, 512), "");
}

}  // namespace
}  // namespace roam
