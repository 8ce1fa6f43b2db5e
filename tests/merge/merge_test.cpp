#include "merge/merge.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

namespace roam {
namespace {

TEST(Merge, ConcatenationRejectsPartsThatDoNotAddUp) {
  std::vector<std::vector<OpId>> parts = {{0, 2}, {1}};
  EXPECT_EQ(ConcatenateOrders(parts, 3), (std::vector<OpId>{0, 2, 1}));
  parts = {{0, 2}, {2, 1}};
  EXPECT_THROW(ConcatenateOrders(parts, 3), std::logic_error);
  parts = {{0}, {1}};
  EXPECT_THROW(ConcatenateOrders(parts, 3), std::logic_error);
}

// The forward/backward mirror: leaf B2 frees activation a2 (created after a1), leaf B1 frees
// a1. Stacking puts B1's activation at the bottom and B2's right above it; each leaf's
// temporary reuses the space of the activations already freed.
TEST(Merge, StacksActivationsLongestLivedLowestAsRoamEq9) {
  std::vector<Interval> iv = {
      {100, 0, 9},  // a1: created first, freed last (in B1)
      {200, 1, 6},  // a2: freed in B2
      {300, 5, 6},  // t2: B2's temporary
      {50, 8, 9},   // t1: B1's temporary
  };
  std::vector<LeafLayout> leaves = {
      {{1, 2}, {0, 200}, {1, 0}},  // B2: a2 pinned at 0, t2 above it
      {{0, 3}, {0, 100}, {1, 0}},  // B1: a1 pinned at 0, t1 above it
  };
  MergeResult r = MergeLayouts(iv, leaves, 1, {.slide_down = false});
  EXPECT_EQ(r.offsets, (std::vector<Bytes>{0, 100, 300, 100}));
  EXPECT_EQ(r.stats.conflicts, 0);
  EXPECT_TRUE(CheckLayout(iv, r.offsets, 1).empty());
}

TEST(Merge, ReassignsConflictingTemporariesAndAlwaysReturnsAValidLayout) {
  std::mt19937_64 rng(9);
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 2 + static_cast<int>(rng() % 20);
    std::vector<Interval> iv;
    for (int i = 0; i < n; ++i) {
      const Step a = static_cast<Step>(rng() % 12), b = static_cast<Step>(rng() % 12);
      iv.push_back({static_cast<Bytes>(8 * (1 + rng() % 16)), std::min(a, b), std::max(a, b)});
    }
    // Random leaves, each with its own (greedy, stacked) valid layout.
    const int nl = 1 + static_cast<int>(rng() % 4);
    std::vector<LeafLayout> leaves(static_cast<size_t>(nl));
    for (int i = 0; i < n; ++i) {
      LeafLayout& leaf = leaves[rng() % static_cast<size_t>(nl)];
      leaf.buffers.push_back(i);
      leaf.activation.push_back(rng() % 3 == 0);
    }
    for (LeafLayout& leaf : leaves) {
      Bytes top = 0;  // activations first, then the rest: trivially valid
      for (int pass = 1; pass >= 0; --pass)
        for (size_t k = 0; k < leaf.buffers.size(); ++k)
          if (leaf.activation[k] == pass) {
            leaf.offsets.resize(leaf.buffers.size());
            leaf.offsets[k] = top;
            top += iv[static_cast<size_t>(leaf.buffers[k])].size;
          }
      leaf.offsets.resize(leaf.buffers.size());
    }
    MergeResult r = MergeLayouts(iv, leaves, 8);
    EXPECT_EQ(CheckLayout(iv, r.offsets, 8), "") << "trial " << trial;
    EXPECT_EQ(r.stats.height, LayoutHeight(iv, r.offsets));
    EXPECT_GE(r.stats.height, MaxLiveBytes(iv));
  }
}

// Random leaves with greedy stacked layouts of their own, so that stacking them conflicts.
std::vector<LeafLayout> RandomLeaves(std::mt19937_64& rng, std::span<const Interval> iv) {
  const int nl = 1 + static_cast<int>(rng() % 4);
  std::vector<LeafLayout> leaves(static_cast<size_t>(nl));
  for (int i = 0; i < static_cast<int>(iv.size()); ++i) {
    LeafLayout& leaf = leaves[rng() % static_cast<size_t>(nl)];
    leaf.buffers.push_back(i);
    leaf.activation.push_back(rng() % 3 == 0);
  }
  for (LeafLayout& leaf : leaves) {
    leaf.offsets.resize(leaf.buffers.size());
    Bytes top = 0;
    for (int pass = 1; pass >= 0; --pass)
      for (size_t k = 0; k < leaf.buffers.size(); ++k)
        if (leaf.activation[k] == pass) {
          leaf.offsets[k] = top;
          top += iv[static_cast<size_t>(leaf.buffers[k])].size;
        }
  }
  return leaves;
}

TEST(Merge, TheSearchReassignsConflictsNeverWorseAndSometimesBetterThanBestFit) {
  std::mt19937_64 rng(21);
  int better = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int n = 4 + static_cast<int>(rng() % 16);
    std::vector<Interval> iv;
    for (int i = 0; i < n; ++i) {
      const Step a = static_cast<Step>(rng() % 10), b = static_cast<Step>(rng() % 10);
      iv.push_back({static_cast<Bytes>(8 * (1 + rng() % 12)), std::min(a, b), std::max(a, b)});
    }
    const std::vector<LeafLayout> leaves = RandomLeaves(rng, iv);
    MergeParams best_fit;
    best_fit.search_reassignment = false;
    const MergeResult plain = MergeLayouts(iv, leaves, 8, best_fit);
    const MergeResult searched = MergeLayouts(iv, leaves, 8);
    ASSERT_EQ(CheckLayout(iv, searched.offsets, 8), "") << "trial " << trial;
    EXPECT_EQ(searched.stats.height, LayoutHeight(iv, searched.offsets));
    EXPECT_EQ(searched.stats.best_fit_height, plain.stats.height);
    EXPECT_LE(searched.stats.height, plain.stats.height) << "trial " << trial;
    EXPECT_EQ(searched.stats.by_search, searched.stats.height < plain.stats.height);
    if (searched.stats.height < plain.stats.height) ++better;
  }
  EXPECT_GE(better, 1);  // the conflicts are not all easy for best-fit
}

TEST(Merge, SlideDownLowersAndNeverBreaksALayout) {
  std::vector<Interval> iv = {{64, 0, 3}, {64, 2, 5}, {64, 4, 7}};
  std::vector<Bytes> offsets = {0, 640, 1280};
  SlideDown(iv, offsets, 64);
  EXPECT_EQ(offsets, (std::vector<Bytes>{0, 64, 0}));
}

TEST(Merge, RejectsABufferLaidOutTwiceOrNotAtAll) {
  std::vector<Interval> iv = {{8, 0, 1}, {8, 1, 2}};
  std::vector<LeafLayout> twice = {{{0, 1}, {0, 8}, {0, 0}}, {{1}, {0}, {0}}};
  EXPECT_THROW(MergeLayouts(iv, twice, 1), std::logic_error);
  std::vector<LeafLayout> missing = {{{0}, {0}, {0}}};
  EXPECT_THROW(MergeLayouts(iv, missing, 1), std::logic_error);
}

}  // namespace
}  // namespace roam
