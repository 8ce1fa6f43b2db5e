// Repacking a layout window by window: always valid and never higher, at the brute-force
// optimum's height or above, lower than best-fit on flat profiles with windows smaller than the
// instance, deterministic, and bounded by its work limits and deadline.
#include "layout/repack.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <stdexcept>

#include "core/placement.h"
#include "tests/layout/instances.h"

namespace roam::layout {
namespace {

using testing::BruteForceMinHeight;
using testing::PerfectPacking;
using testing::RandomIntervals;

TEST(Repack, StaysValidNeverRisesAndNeverBeatsTheBruteForceOptimum) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    SCOPED_TRACE(trial);
    const auto in = RandomIntervals(rng, 7, 6, 8);
    const std::vector<Bytes> start = LongLivedFirstLayout(in, 1);
    RepackParams params;
    params.max_free_buffers = 1 + trial % 7;  // windows from one buffer to the whole instance
    params.max_margin_steps = trial % 3;
    params.seed = trial;
    const RepackResult r = Repack(in, 1, start, 0, params);
    ASSERT_EQ(CheckLayout(in, r.offsets, 1), "");
    EXPECT_EQ(r.height, LayoutHeight(in, r.offsets));
    EXPECT_LE(r.height, LayoutHeight(in, start));
    const std::vector<Bytes> ones(in.size(), 1), free(in.size(), -1);
    EXPECT_GE(r.height, BruteForceMinHeight(in, ones, free));
    EXPECT_LE(r.improved, r.subproblems);
    EXPECT_LE(r.subproblems, params.max_subproblems);
  }
}

// The windows' search (RepackParams::search) under each of its preorder and branching
// settings: every layout valid, never higher, never below the brute-force optimum.
TEST(Repack, EveryWindowSearchStaysValidNeverRisesAndNeverBeatsTheBruteForceOptimum) {
  std::vector<SearchParams> searches(5);
  searches[1].multiple_preorders = false;  // one preorder and the candidate branching
  searches[1].random_preorders = 0;
  searches[2].bottom_left = false;  // the candidate branching alone
  searches[3].portfolio = false;    // the bottom-left branching alone
  searches[4].minimalloc_preorders = true;
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE(trial);
    const auto in = RandomIntervals(rng, 7, 6, 8);
    const std::vector<Bytes> start = LongLivedFirstLayout(in, 1);
    const std::vector<Bytes> ones(in.size(), 1), free(in.size(), -1);
    const Bytes optimum = BruteForceMinHeight(in, ones, free);
    for (size_t k = 0; k < searches.size(); ++k) {
      SCOPED_TRACE(k);
      RepackParams params;
      params.max_free_buffers = 1 + trial % 7;
      params.seed = trial;
      params.search = searches[k];
      const RepackResult r = Repack(in, 1, start, 0, params);
      ASSERT_EQ(CheckLayout(in, r.offsets, 1), "");
      EXPECT_LE(r.height, LayoutHeight(in, start));
      EXPECT_GE(r.height, optimum);
    }
  }
}

// Short-lived buffers over a long time line, like the lifetimes of remat's rewritten layered
// graphs: n buffers of 1 to 16 units living 1 to 24 steps each.
std::vector<Interval> FlatProfile(std::mt19937_64& rng, int n, int horizon, Bytes unit) {
  std::vector<Interval> in;
  for (int i = 0; i < n; ++i) {
    const auto start = static_cast<Step>(rng() % static_cast<std::uint64_t>(horizon));
    const auto length = static_cast<Step>(rng() % 24);
    in.push_back({unit * static_cast<Bytes>(1 + rng() % 16), start, start + length});
  }
  return in;
}

// Flat profiles of 600 buffers from best-fit, towards max-live, with windows of at most 150
// buffers: no window is the whole instance, yet every layout above max-live comes down, most of
// them to it (measured: 6 of the 7 above it, 5 to max-live).
TEST(Repack, LowersBestFitOnFlatProfilesWithWindowsSmallerThanTheInstance) {
  std::mt19937_64 rng(11);
  int above = 0, reached = 0;
  for (int trial = 0; trial < 8; ++trial) {
    SCOPED_TRACE(trial);
    const auto in = FlatProfile(rng, 600, 400, 16);
    const std::vector<Bytes> start = BestFitLayout(in, 16);
    const Bytes start_height = LayoutHeight(in, start);
    const Bytes max_live = MaxLiveBytes(in);
    RepackParams params;
    params.max_free_buffers = 150;
    params.max_margin_steps = 10;
    const RepackResult r = Repack(in, 16, start, max_live, params);
    ASSERT_EQ(CheckLayout(in, r.offsets, 16), "");
    EXPECT_GE(r.height, max_live);
    if (start_height == max_live) {
      EXPECT_EQ(r.subproblems, 0);
      continue;
    }
    ++above;
    EXPECT_LT(r.height, start_height);
    EXPECT_GT(r.improved, 0);
    reached += r.height == max_live;
  }
  EXPECT_EQ(above, 7);
  EXPECT_GE(reached, 4);
}

TEST(Repack, TheSameInputGivesTheSameLayout) {
  std::mt19937_64 rng(7);
  const auto in = PerfectPacking(rng, 200, 1 << 10, 120, 8);
  const std::vector<Bytes> start = BestFitLayout(in, 8);
  RepackParams params;
  params.max_free_buffers = 40;
  const RepackResult a = Repack(in, 8, start, 0, params);
  const RepackResult b = Repack(in, 8, start, 0, params);
  EXPECT_EQ(a.offsets, b.offsets);
  EXPECT_EQ(a.subproblems, b.subproblems);
  EXPECT_LT(a.height, LayoutHeight(in, start));
}

TEST(Repack, StopsAtTheCapacityTheWorkBoundAndTheDeadline) {
  std::mt19937_64 rng(9);
  const auto in = PerfectPacking(rng, 120, 1 << 10, 80, 8);
  const std::vector<Bytes> start = BestFitLayout(in, 8);
  const Bytes start_height = LayoutHeight(in, start);
  RepackParams params;
  params.max_free_buffers = 30;
  // Already within the capacity: nothing to do.
  RepackResult r = Repack(in, 8, start, start_height, params);
  EXPECT_EQ(r.subproblems, 0);
  EXPECT_EQ(r.offsets, start);
  // No work allowed.
  params.max_subproblems = 0;
  r = Repack(in, 8, start, 0, params);
  EXPECT_EQ(r.subproblems, 0);
  EXPECT_EQ(r.height, start_height);
  // A deadline already past.
  params.max_subproblems = 300;
  const Deadline past(1e-9);
  while (!past.Expired()) {
  }
  r = Repack(in, 8, start, 0, params, past);
  EXPECT_EQ(r.subproblems, 0);
  EXPECT_EQ(r.offsets, start);
  // Two subproblems at most.
  params.max_subproblems = 2;
  r = Repack(in, 8, start, 0, params);
  EXPECT_LE(r.subproblems, 2);
}

// Buffers all alive at one step: every window frees all of them, so after the first fails the
// others are the same subproblem on the same layout and are not searched again. They still
// count, so the work bound and the failures in a row end the repack where they did before.
TEST(Repack, AWindowThatFailedIsNotSearchedAgainOnTheSameLayout) {
  std::vector<Interval> in;
  for (int i = 0; i < 6; ++i) in.push_back({8 + i, i, 6 + i});
  const std::vector<Bytes> start = BestFitLayout(in, 1);
  RepackParams params;
  params.max_failures_in_a_row = 20;
  const RepackResult r = Repack(in, 1, start, 0, params);
  EXPECT_EQ(r.improved, 0);  // stacked at max-live already
  EXPECT_EQ(r.offsets, start);
  EXPECT_EQ(r.subproblems, 20);
  EXPECT_EQ(r.repeated, 19);
  // Where windows succeed, the repeats are of windows drawn after a failure on one layout.
  std::mt19937_64 rng(7);
  const auto flat = PerfectPacking(rng, 200, 1 << 10, 120, 8);
  params = RepackParams();
  params.max_free_buffers = 40;
  const RepackResult s = Repack(flat, 8, BestFitLayout(flat, 8), 0, params);
  EXPECT_GT(s.improved, 0);
  EXPECT_LE(s.repeated + s.improved, s.subproblems);
}

// The widest margins the config allows overflow no step; limits out of range are refused.
TEST(Repack, ExtremeMarginsWorkAndLimitsOutOfRangeAreRejected) {
  std::mt19937_64 rng(9);
  const auto in = PerfectPacking(rng, 60, 1 << 10, 40, 8);
  const std::vector<Bytes> start = BestFitLayout(in, 8);
  RepackParams params;
  params.max_margin_steps = std::numeric_limits<int>::max();
  const RepackResult r = Repack(in, 8, start, 0, params);
  EXPECT_EQ(CheckLayout(in, r.offsets, 8), "");
  EXPECT_LE(r.height, LayoutHeight(in, start));
  for (int k = 0; k < 6; ++k) {
    RepackParams bad;
    if (k == 0) bad.max_subproblems = -1;
    if (k == 1) bad.max_failures_in_a_row = 0;
    if (k == 2) bad.max_free_buffers = 0;
    if (k == 3) bad.max_margin_steps = -1;
    if (k == 4) bad.subproblem_max_nodes = 0;
    if (k == 5) bad.seed = -1;
    EXPECT_THROW(Repack(in, 8, start, 0, bad), std::invalid_argument) << k;
  }
}

TEST(Repack, AnInvalidLayoutIsRejected) {
  const std::vector<Interval> in = {{4, 0, 3}, {4, 2, 5}};
  EXPECT_THROW(Repack(in, 1, std::vector<Bytes>{0, 2}, 0, RepackParams()), std::invalid_argument);
  EXPECT_THROW(Repack(in, 2, std::vector<Bytes>{0, 5}, 0, RepackParams()), std::invalid_argument);
  EXPECT_THROW(Repack(in, 1, std::vector<Bytes>{0}, 0, RepackParams()), std::invalid_argument);
}

// One buffer lifted above a layout (as the prune in the arena leaves a buffer that now lives
// longer): a window wide enough to free every buffer brings it to the brute-force optimum at
// (when the others' height allows it); a narrow one moves only buffers alive in it, and a layout it
// cannot mend comes back as given. Always valid, never higher.
TEST(RepackAround, BringsOneLiftedBufferWithinCapacityMovingOnlyItsWindow) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 200; ++trial) {
    SCOPED_TRACE(trial);
    const auto in = RandomIntervals(rng, 6, 6, 8);
    const std::vector<Bytes> ones(in.size(), 1), free(in.size(), -1);
    const Bytes optimum = BruteForceMinHeight(in, ones, free);
    std::vector<Bytes> start = LongLivedFirstLayout(in, 1);
    const int lifted = trial % static_cast<int>(in.size());
    start[U(lifted)] = LayoutHeight(in, start);  // above every other buffer: still valid
    ASSERT_EQ(CheckLayout(in, start, 1), "");
    // Within capacity but for the lifted buffer: the others' height.
    Bytes capacity = 0;
    for (size_t b = 0; b < in.size(); ++b)
      if (static_cast<int>(b) != lifted) capacity = std::max(capacity, start[b] + in[b].size);
    RepackParams params;
    params.max_free_buffers = 100;
    const std::vector<int> narrow = {0}, wide = {0, 1000};
    const RepackResult a = RepackAround(in, 1, start, capacity, lifted, narrow, params);
    ASSERT_EQ(CheckLayout(in, a.offsets, 1), "");
    EXPECT_LE(a.height, LayoutHeight(in, start));
    EXPECT_EQ(a.height <= capacity, a.improved == 1);
    if (a.improved == 0) {
      EXPECT_EQ(a.offsets, start);
    }
    for (size_t b = 0; b < in.size(); ++b) {
      if (in[b].end < in[U(lifted)].start || in[b].start > in[U(lifted)].end) {
        EXPECT_EQ(a.offsets[b], start[b]) << b;  // outside the window at margin 0
      }
    }
    const RepackResult w = RepackAround(in, 1, start, capacity, lifted, wide, params);
    ASSERT_EQ(CheckLayout(in, w.offsets, 1), "");
    EXPECT_LE(w.height, LayoutHeight(in, start));
    if (capacity >= optimum) {
      EXPECT_LE(w.height, capacity);
    }
    EXPECT_LE(w.subproblems, 2);
  }
  const std::vector<Interval> in = {{4, 0, 1}, {4, 1, 2}};
  const std::vector<int> bad_margin = {-1}, margins = {0};
  EXPECT_THROW(RepackAround(in, 1, std::vector<Bytes>{0, 0}, 4, 0, bad_margin, RepackParams()),
               std::invalid_argument);
  EXPECT_THROW(RepackAround(in, 1, std::vector<Bytes>{0, 0}, 4, 2, margins, RepackParams()),
               std::invalid_argument);
  EXPECT_THROW(RepackAround(in, 1, std::vector<Bytes>{0, 2}, 4, 0, margins, RepackParams()),
               std::invalid_argument);
}

}  // namespace
}  // namespace roam::layout
