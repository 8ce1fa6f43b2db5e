#include "baseline/layouts.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <random>
#include <tuple>

#include "core/error.h"

namespace roam {
namespace {

constexpr Bytes KiB = 1024;
constexpr Bytes MiB = 1024 * 1024;

std::vector<Interval> RandomIntervals(std::mt19937_64& rng, int count, int steps, Bytes alignment,
                                      Bytes max_size) {
  std::uniform_int_distribution<Step> step(0, steps - 1);
  std::uniform_int_distribution<Bytes> size(1, max_size);
  std::vector<Interval> intervals;
  for (int i = 0; i < count; ++i) {
    Step a = step(rng), b = step(rng);
    // Mostly short temporaries, some long-lived activations, like a training step.
    if (i % 4 != 0) b = std::min<Step>(steps - 1, a + b % 3);
    intervals.push_back({AlignUp(size(rng), alignment), std::min(a, b), std::max(a, b)});
  }
  return intervals;
}

TEST(Layouts, UnknownNameIsAnInputError) {
  std::vector<Interval> intervals = {{512, 0, 0}};
  EXPECT_THROW(PlaceBuffers("first-fit", intervals, 512), InputError);
}

TEST(Layouts, EveryLayoutIsValidAndNoLowerThanTheLiveBytesOnRandomIntervals) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const Bytes alignment = std::array<Bytes, 4>{512, 1, 256, 1024}[static_cast<size_t>(trial % 4)];
    const Bytes max_size = trial % 2 == 0 ? 5000 : 30 * MiB;  // both allocator pools
    auto intervals = RandomIntervals(rng, 1 + trial % 60, 1 + trial % 25, alignment, max_size);
    for (std::string_view name : LayoutNames()) {
      auto offsets = PlaceBuffers(name, intervals, alignment);
      ASSERT_EQ(CheckLayout(intervals, offsets, alignment), "") << name << " trial " << trial;
      EXPECT_GE(LayoutHeight(intervals, offsets), MaxLiveBytes(intervals)) << name;
      EXPECT_EQ(offsets, PlaceBuffers(name, intervals, alignment)) << name << " deterministic";
    }
  }
}

TEST(Layouts, AnEmptyProblemHasAnEmptyLayout) {
  for (std::string_view name : LayoutNames())
    EXPECT_TRUE(PlaceBuffers(name, std::vector<Interval>{}, 512).empty()) << name;
}

// ----- pytorch -------------------------------------------------------------------------------

PytorchLayout Simulate(const std::vector<Interval>& intervals, Bytes alignment = 512) {
  return SimulatePytorchAllocator(intervals, alignment);
}

TEST(PytorchAllocator, ServesRequestsUpTo1MiBFromA2MiBSmallSegment) {
  auto layout = Simulate({{1000, 0, 1}, {MiB, 0, 1}});
  EXPECT_EQ(layout.reserved, 2 * MiB);
  EXPECT_EQ(layout.offsets, (std::vector<Bytes>{0, 1024}));  // 1000 rounds to 1024
}

TEST(PytorchAllocator, ServesLargerRequestsFromA20MiBSegment) {
  auto layout = Simulate({{MiB + 512, 0, 1}});
  EXPECT_EQ(layout.reserved, 20 * MiB);
}

TEST(PytorchAllocator, RoundsRequestsOf10MiBOrMoreUpTo2MiBSegments) {
  EXPECT_EQ(Simulate({{11 * MiB + 1, 0, 0}}).reserved, 12 * MiB);
  EXPECT_EQ(Simulate({{10 * MiB, 0, 0}}).reserved, 10 * MiB);
  EXPECT_EQ(Simulate({{10 * MiB - 512, 0, 0}}).reserved, 20 * MiB);
}

TEST(PytorchAllocator, KeepsSmallAndLargePoolsApart) {
  // The large segment has 19 MiB free, but a small request needs a small segment.
  auto layout = Simulate({{MiB + 512, 0, 1}, {4 * KiB, 1, 1}});
  EXPECT_EQ(layout.reserved, 22 * MiB);
  EXPECT_EQ(layout.offsets[1], 20 * MiB);  // segments laid end to end in creation order
}

TEST(PytorchAllocator, SplitsALargeBlockOnlyWhenMoreThan1MiBRemains) {
  // 19 MiB leaves exactly 1 MiB: kept whole, so the second request needs a new segment.
  auto whole = Simulate({{19 * MiB, 0, 1}, {MiB + 512, 1, 1}});
  EXPECT_EQ(whole.reserved, 40 * MiB);
  // 18.5 MiB leaves 1.5 MiB: split, and the second request fits in the remainder.
  auto split = Simulate({{18 * MiB + 512 * KiB, 0, 1}, {MiB + 512, 1, 1}});
  EXPECT_EQ(split.reserved, 20 * MiB);
  EXPECT_EQ(split.offsets[1], 18 * MiB + 512 * KiB);
}

TEST(PytorchAllocator, SplitsASmallBlockWhenAtLeast512BytesRemain) {
  // The 2 MiB small segment is split down to its last 512 bytes, which serve the third.
  auto layout = Simulate({{MiB, 0, 1}, {MiB - 512, 0, 1}, {512, 1, 1}});
  EXPECT_EQ(layout.reserved, 2 * MiB);
  EXPECT_EQ(layout.offsets, (std::vector<Bytes>{0, MiB, 2 * MiB - 512}));
}

TEST(PytorchAllocator, CoalescesFreedNeighbours) {
  // a, b, c fill [0, 18) MiB of one segment; a and b are freed together, and the next 8 MiB
  // request fits only in their merged block.
  auto layout = Simulate({{4 * MiB, 0, 0}, {4 * MiB, 0, 0}, {10 * MiB, 0, 1}, {8 * MiB, 1, 1}});
  EXPECT_EQ(layout.offsets, (std::vector<Bytes>{0, 4 * MiB, 8 * MiB, 0}));
  EXPECT_EQ(layout.reserved, 20 * MiB);
}

TEST(PytorchAllocator, NeverReturnsSegments) {
  // Everything is free after step 0, but the cached 12 MiB segment cannot hold 14 MiB.
  auto layout = Simulate({{12 * MiB, 0, 0}, {14 * MiB, 1, 1}});
  EXPECT_EQ(layout.offsets[1], 12 * MiB);
  EXPECT_EQ(layout.reserved, 26 * MiB);
}

TEST(PytorchAllocator, ChoosesTheSmallestFreeBlockThatFits) {
  // Free blocks after step 0: [0, 6) MiB and [8, 12) MiB, plus the tail [14, 20) MiB.
  std::vector<Interval> intervals = {
      {6 * MiB, 0, 0}, {2 * MiB, 0, 1}, {4 * MiB, 0, 0}, {2 * MiB, 0, 1}, {3 * MiB, 1, 1}};
  auto layout = Simulate(intervals);
  EXPECT_EQ(layout.offsets[4], 8 * MiB);
  EXPECT_EQ(layout.reserved, 20 * MiB);
}

TEST(PytorchAllocator, AllocatesBeforeFreeingWithinAStep) {
  // b starts at the step a ends, so it cannot reuse a's block.
  auto layout = Simulate({{4 * KiB, 0, 1}, {4 * KiB, 1, 2}, {4 * KiB, 2, 2}});
  EXPECT_EQ(layout.offsets, (std::vector<Bytes>{0, 4 * KiB, 0}));
}

TEST(PytorchAllocator, RoundsToMultiplesOfALargerAlignment) {
  std::vector<Interval> intervals = {{1024, 0, 1}, {1024, 0, 1}, {3072, 0, 1}};
  auto layout = Simulate(intervals, 1024);
  EXPECT_EQ(layout.offsets, (std::vector<Bytes>{0, 1024, 2048}));
  std::vector<Interval> odd = {{3000, 0, 1}, {3000, 0, 1}};
  auto lcm = Simulate(odd, 3000);  // granule lcm(512, 3000) = 192000
  EXPECT_EQ(lcm.offsets, (std::vector<Bytes>{0, 192000}));
  EXPECT_EQ(CheckLayout(odd, lcm.offsets, 3000), "");
}

TEST(PytorchAllocator, PlaceBuffersReportsTheSimulatedOffsets) {
  std::vector<Interval> intervals = {{MiB + 512, 0, 1}, {4 * KiB, 1, 1}, {4 * KiB, 2, 3}};
  EXPECT_EQ(PlaceBuffers("pytorch", intervals, 512), Simulate(intervals).offsets);
}

// ----- greedy best fit -----------------------------------------------------------------------

// The placement rule written directly: scan every placed buffer sharing a step, in address
// order. The indexed implementation must agree with it exactly.
std::vector<Bytes> NaiveBestFit(const std::vector<Interval>& intervals,
                                const std::vector<size_t>& order, Bytes alignment) {
  std::vector<Bytes> offsets(intervals.size(), 0);
  std::vector<size_t> placed;
  for (size_t i : order) {
    const Interval& in = intervals[i];
    if (in.size == 0) continue;
    std::vector<std::pair<Bytes, Bytes>> chunks;
    for (size_t j : placed)
      if (intervals[j].start <= in.end && in.start <= intervals[j].end)
        chunks.emplace_back(offsets[j], offsets[j] + intervals[j].size);
    std::sort(chunks.begin(), chunks.end());
    Bytes cursor = 0, best = -1, best_gap = 0;
    for (const auto& [lo, hi] : chunks) {
      Bytes start = AlignUp(cursor, alignment);
      if (lo - start >= in.size && (best < 0 || lo - start < best_gap)) {
        best = start;
        best_gap = lo - start;
      }
      cursor = std::max(cursor, hi);
    }
    offsets[i] = best >= 0 ? best : AlignUp(cursor, alignment);
    placed.push_back(i);
  }
  return offsets;
}

TEST(GreedyBestFit, MatchesADirectScanOfThePlacedBuffers) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    const Bytes alignment = trial % 3 == 0 ? 1 : 512;
    auto intervals = RandomIntervals(rng, 1 + trial % 80, 1 + trial % 30, alignment, 4000);
    std::vector<size_t> order(intervals.size());
    std::iota(order.begin(), order.end(), 0);
    std::shuffle(order.begin(), order.end(), rng);
    ASSERT_EQ(GreedyBestFitPlacement(intervals, order, alignment),
              NaiveBestFit(intervals, order, alignment))
        << "trial " << trial;
  }
}

// Largest first written directly: the fixed buffers where they are, then the others by
// decreasing size (longer lifetime, then index, on ties), each at the lowest offset, a multiple
// of its alignment, clear of every placed buffer sharing a step.
std::vector<Bytes> NaiveLargestFirst(const std::vector<Interval>& intervals,
                                     const std::vector<Bytes>& alignments,
                                     const std::vector<Bytes>& fixed) {
  std::vector<Bytes> offsets(intervals.size(), 0);
  std::vector<size_t> placed, order;
  for (size_t i = 0; i < intervals.size(); ++i) {
    if (fixed[i] >= 0) offsets[i] = fixed[i];
    if (intervals[i].size == 0) continue;
    if (fixed[i] >= 0)
      placed.push_back(i);
    else
      order.push_back(i);
  }
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const Interval &x = intervals[a], &y = intervals[b];
    return std::make_tuple(-x.size, x.start - x.end, a) <
           std::make_tuple(-y.size, y.start - y.end, b);
  });
  for (size_t i : order) {
    std::vector<std::pair<Bytes, Bytes>> busy;
    for (size_t j : placed)
      if (intervals[j].start <= intervals[i].end && intervals[i].start <= intervals[j].end)
        busy.emplace_back(offsets[j], offsets[j] + intervals[j].size);
    std::sort(busy.begin(), busy.end());
    Bytes candidate = 0;
    for (const auto& [lo, hi] : busy) {
      if (candidate + intervals[i].size <= lo) break;
      candidate = std::max(candidate, AlignUp(hi, alignments[i]));
    }
    offsets[i] = candidate;
    placed.push_back(i);
  }
  return offsets;
}

TEST(LargestFirst, MatchesADirectScanWithFixedBuffersAndPerBufferAlignments) {
  std::mt19937_64 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    const Bytes alignment = trial % 3 == 0 ? 1 : 512;
    auto intervals = RandomIntervals(rng, 1 + trial % 60, 1 + trial % 25, alignment, 4000);
    const size_t n = intervals.size();
    if (trial % 5 == 0) intervals[n / 2].size = 0;
    // Some buffers stacked from 0 (pinned at the bottom), or fixed above everything else.
    std::vector<Bytes> fixed(n, -1);
    Bytes base = 0, top = 1 << 30;
    for (size_t i = 0; i < n; ++i) {
      if (trial % 2 == 0 && i % 7 == 1) {
        fixed[i] = base;
        base += intervals[i].size;
      } else if (trial % 3 == 1 && i % 9 == 4) {
        fixed[i] = top;
        top += AlignUp(intervals[i].size, alignment);
      }
    }
    const bool per_buffer = trial % 4 == 3;
    std::vector<Bytes> alignments(n, alignment);
    if (per_buffer)
      for (size_t i = 0; i < n; ++i)
        if (fixed[i] < 0) alignments[i] = std::array<Bytes, 3>{1, 8, 512}[i % 3];
    const std::vector<Bytes> got =
        per_buffer ? LargestFirstLayout(intervals, alignments, fixed)
                   : LargestFirstLayout(intervals, std::span<const Bytes>(&alignment, 1), fixed);
    ASSERT_EQ(got, NaiveLargestFirst(intervals, alignments, fixed)) << "trial " << trial;
  }
}

TEST(GreedyBestFit, PicksTheSmallestSufficientGapNotTheLowest) {
  std::vector<Interval> intervals = {{3, 0, 1},
                                     {1, 0, 9},
                                     {2, 0, 1},
                                     {1, 0, 9},  // leave gaps [0,3) and [4,6) from step 2
                                     {2, 2, 9}};
  std::vector<size_t> order = {0, 1, 2, 3, 4};
  auto offsets = GreedyBestFitPlacement(intervals, order, 1);
  EXPECT_EQ(offsets, (std::vector<Bytes>{0, 3, 4, 6, 4}));
}

TEST(GreedyBestFit, BreaksEqualGapsByLowestOffsetAndGoesOnTopWhenNothingFits) {
  std::vector<Interval> intervals = {{2, 0, 1}, {1, 0, 9}, {2, 0, 1},
                                     {1, 0, 9}, {2, 2, 9}, {3, 2, 9}};
  std::vector<size_t> order = {0, 1, 2, 3, 4, 5};
  auto offsets = GreedyBestFitPlacement(intervals, order, 1);
  EXPECT_EQ(offsets[4], 0);  // gaps [0,2) and [3,5) are equal: the lower one
  EXPECT_EQ(offsets[5], 6);  // no gap holds 3: on top of the highest overlapping buffer
}

TEST(GreedyBestFit, IgnoresBuffersThatShareNoStep) {
  std::vector<Interval> intervals = {{8, 0, 3}, {8, 4, 7}, {4, 3, 4}};
  std::vector<size_t> order = {0, 1, 2};
  EXPECT_EQ(GreedyBestFitPlacement(intervals, order, 1), (std::vector<Bytes>{0, 0, 8}));
}

TEST(Llfb, PlacesLongerLivedBuffersFirstAndLower) {
  std::vector<Interval> intervals = {{5 * 512, 0, 0}, {512, 0, 9}};
  EXPECT_EQ(PlaceBuffers("llfb", intervals, 512), (std::vector<Bytes>{512, 0}));
  // best-fit goes by size: the big temporary at the bottom.
  EXPECT_EQ(PlaceBuffers("best-fit", intervals, 512), (std::vector<Bytes>{0, 5 * 512}));
}

TEST(Llfb, BreaksLengthTiesByLargerSizeThenIndex) {
  std::vector<Interval> intervals = {{512, 0, 3}, {1024, 1, 4}, {512, 2, 5}};
  EXPECT_EQ(PlaceBuffers("llfb", intervals, 512), (std::vector<Bytes>{1024, 0, 1536}));
}

// Nested lifetimes (activations saved for the backward pass) with temporaries in between:
// long-lived first stacks each activation on the ones enclosing it, which is optimal.
TEST(Llfb, IsOptimalOnNestedActivationsWithTemporaries) {
  std::vector<Interval> intervals = {{4096, 0, 13},  {2048, 1, 12}, {1024, 2, 11},
                                     {3072, 3, 10},                                // activations
                                     {8192, 4, 5},   {512, 6, 7},   {1536, 8, 9},  // temporaries
                                     {2048, 11, 12}, {4096, 12, 13}};
  auto offsets = PlaceBuffers("llfb", intervals, 512);
  EXPECT_EQ(CheckLayout(intervals, offsets, 512), "");
  EXPECT_EQ(LayoutHeight(intervals, offsets), MaxLiveBytes(intervals));
}

TEST(BestFit, IsOptimalOnAnAlternatingChain) {
  // A chain of ops, each output read by the next: live pairs (4,2), (2,4), (4,2)...
  std::vector<Interval> intervals = {
      {4096, 0, 1}, {2048, 1, 2}, {4096, 2, 3}, {2048, 3, 4}, {4096, 4, 5}};
  for (std::string_view name : {"best-fit", "llfb"}) {
    auto offsets = PlaceBuffers(name, intervals, 512);
    EXPECT_EQ(CheckLayout(intervals, offsets, 512), "") << name;
    EXPECT_EQ(LayoutHeight(intervals, offsets), 6144) << name;
  }
}

TEST(BestFit, KeepsTheLifetimeOrderWhenItIsLower) {
  // By size the 3 goes first, at the bottom, and height 7 follows; in start order the two
  // early buffers go first and the optimum, 6, follows. best-fit must keep the lower.
  std::vector<Interval> intervals = {{2, 0, 1}, {2, 0, 1}, {2, 1, 3}, {3, 2, 3}};
  std::vector<size_t> by_size = {3, 2, 0, 1};  // size, then longer lifetime
  EXPECT_EQ(LayoutHeight(intervals, GreedyBestFitPlacement(intervals, by_size, 1)), 7);
  auto offsets = PlaceBuffers("best-fit", intervals, 1);
  EXPECT_EQ(CheckLayout(intervals, offsets, 1), "");
  EXPECT_EQ(LayoutHeight(intervals, offsets), 6);
  EXPECT_EQ(MaxLiveBytes(intervals), 6);
}

TEST(Llfb, ReachesTheOptimumWhereBestFitDoesNot) {
  // The buffer living through all four steps goes to the bottom first; greedy by size (or by
  // start) puts the 3-byte temporary there and strands the later buffers above it.
  std::vector<Interval> intervals = {{2, 0, 3}, {2, 2, 3}, {3, 0, 0}, {2, 3, 3}};
  auto llfb = PlaceBuffers("llfb", intervals, 1);
  EXPECT_EQ(CheckLayout(intervals, llfb, 1), "");
  EXPECT_EQ(LayoutHeight(intervals, llfb), MaxLiveBytes(intervals));
  EXPECT_EQ(LayoutHeight(intervals, PlaceBuffers("best-fit", intervals, 1)), 7);
}

}  // namespace
}  // namespace roam
