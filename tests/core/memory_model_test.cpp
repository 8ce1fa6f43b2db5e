#include "core/memory_model.h"

#include <gtest/gtest.h>

#include <random>

#include "core/io.h"
#include "tests/support/random_graph.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

TEST(MemoryModel, GroupsAliasesAndSeparatesPersistentStorage) {
  Graph g = LoadGraph(testing::DataPath("tiny.graph.json"));
  MemoryModel m = BuildMemoryModel(g, 512);
  // w (with its in-place update) and x are persistent: 1024 + 2048 aligned bytes.
  EXPECT_EQ(m.persistent_bytes, 3072);
  // The activation and its relu_ view share one storage; loss and grad_w are separate; the
  // control tensor has no bytes.
  ASSERT_EQ(m.planned.size(), 3u);
  EXPECT_EQ(m.storage_of[2], m.storage_of[3]);
  EXPECT_EQ(m.storages[static_cast<size_t>(m.storage_of[3])].size, 1536);
  EXPECT_EQ(m.storage_of[0], m.storage_of[6]);
}

TEST(MemoryModel, LifetimesFollowAliasesAndOutputs) {
  Graph g = LoadGraph(testing::DataPath("tiny.graph.json"));
  MemoryModel m = BuildMemoryModel(g, 512);
  auto life = ComputeLifetimes(g, m, g.program_order);
  // The activation lives from mm (step 0) to its view's last reader mm_backward (step 3).
  EXPECT_EQ(life[static_cast<size_t>(m.storage_of[2])], (Lifetime{0, 3}));
  // The loss is an output: resident to the last step although nobody reads it.
  EXPECT_EQ(life[static_cast<size_t>(m.storage_of[4])], (Lifetime{2, 4}));
  EXPECT_EQ(life[static_cast<size_t>(m.storage_of[5])], (Lifetime{3, 4}));
  EXPECT_EQ(MemoryProfile(m, life, 5), (std::vector<Bytes>{1536, 1536, 2048, 3072, 1536}));
  EXPECT_EQ(TheoreticalPeak(g, m, g.program_order), 3072);
}

TEST(MemoryModel, AlignmentRoundsEveryStorageUp) {
  Graph g = LoadGraph(testing::DataPath("tiny.graph.json"));
  MemoryModel m = BuildMemoryModel(g, 1);
  EXPECT_EQ(m.persistent_bytes, 3000);
  EXPECT_EQ(TheoreticalPeak(g, m, g.program_order), 1500 + 4 + 1000);
}

TEST(MemoryModel, UnconsumedTensorLivesOnlyAtItsProducer) {
  Graph g;
  g.ops = {Op{0, "a", Phase::kUnknown, {}, {}}, Op{1, "b", Phase::kUnknown, {}, {}}};
  Tensor t;
  t.size = 100;
  t.producer = 0;
  g.tensors = {t};
  Finalize(g, "x");
  MemoryModel m = BuildMemoryModel(g, 512);
  auto life = ComputeLifetimes(g, m, g.program_order);
  EXPECT_EQ(life[0], (Lifetime{0, 0}));
}

TEST(MemoryModel, MaxLiveBytesEqualsProfilePeakOnRandomGraphs) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    Graph g = testing::RandomGraph(rng, {.ops = 12});
    MemoryModel m = BuildMemoryModel(g, 512);
    auto life = ComputeLifetimes(g, m, g.program_order);
    EXPECT_EQ(MaxLiveBytes(PlannedIntervals(m, life)), TheoreticalPeak(g, m, g.program_order));
  }
}

TEST(CheckLayout, AcceptsDisjointAndRejectsOverlapOrMisalignment) {
  std::vector<Interval> in = {{512, 0, 2}, {512, 2, 3}, {1024, 3, 4}};
  EXPECT_EQ(CheckLayout(in, std::vector<Bytes>{0, 512, 1024}, 512), "");
  // Buffer 2 may reuse buffer 0's bytes: they never share a step.
  EXPECT_EQ(CheckLayout(in, std::vector<Bytes>{0, 1024, 0}, 512), "");
  // Buffers 0 and 1 share step 2 at the same address.
  EXPECT_NE(CheckLayout(in, std::vector<Bytes>{0, 0, 1024}, 512).find("overlap"),
            std::string::npos);
  // Buffer 2 [0,1024) overlaps buffer 1 [512,1024) at step 3.
  EXPECT_NE(CheckLayout(in, std::vector<Bytes>{0, 512, 0}, 512).find("overlap"), std::string::npos);
  EXPECT_NE(CheckLayout(in, std::vector<Bytes>{0, 100, 1024}, 512).find("alignment"),
            std::string::npos);
}

TEST(CheckLayout, AgreesWithPairwiseCheckOnRandomLayouts) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<Interval> in;
    std::vector<Bytes> off;
    int n = 1 + static_cast<int>(rng() % 8);
    for (int i = 0; i < n; ++i) {
      Step a = static_cast<Step>(rng() % 6), b = static_cast<Step>(rng() % 6);
      in.push_back({static_cast<Bytes>(1 + rng() % 3), std::min(a, b), std::max(a, b)});
      off.push_back(static_cast<Bytes>(rng() % 5));
    }
    bool overlap = false;
    for (int i = 0; i < n; ++i)
      for (int j = i + 1; j < n; ++j) {
        const auto &x = in[static_cast<size_t>(i)], &y = in[static_cast<size_t>(j)];
        bool time = x.start <= y.end && y.start <= x.end;
        bool space = off[static_cast<size_t>(i)] < off[static_cast<size_t>(j)] + y.size &&
                     off[static_cast<size_t>(j)] < off[static_cast<size_t>(i)] + x.size;
        overlap = overlap || (time && space);
      }
    EXPECT_EQ(!CheckLayout(in, off, 1).empty(), overlap) << "trial " << trial;
  }
}

}  // namespace
}  // namespace roam
