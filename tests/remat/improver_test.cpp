// The contract every improver of remat (RematParams: kImproverNames) is held to, run through
// the same registry the presets use: given a valid schedule within the target, it returns a
// valid, faithful schedule, no costlier, within the target, and the same one every time; one
// over the target comes back unchanged or within it.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "remat/context.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/remat/brute_force.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using testing::Described;

TEST(Improvers, NeverCostlierNorOverTheTargetNorInvalidAndDeterministic) {
  std::mt19937_64 rng(28);
  for (int trial = 0; trial < 6; ++trial) {
    testing::TrainingGraphOptions o;
    o.layers = 3 + trial % 3;
    o.adam = trial % 2 == 0;
    const Graph g = testing::TrainingLikeGraph(rng, o);
    RematParams params;
    params.alignment = 1;
    params.blocks.group_ops = 1 + trial % 3;
    params.blocks_dp.group_ops = 1 + trial % 3;
    const detail::Context ctx(g, params);
    for (double ratio : {0.9, 0.7}) {
      const auto target = static_cast<Bytes>(static_cast<double>(ctx.no_remat_peak) * ratio);
      const detail::MethodResult greedy = detail::Greedy(g, ctx.start, target, params);
      if (greedy.peak > target) continue;
      const detail::MethodResult in = Described(g, greedy.schedule, params);
      for (std::string_view name : kImproverNames) {
        SCOPED_TRACE(std::string(name) + ", trial " + std::to_string(trial) + ", ratio " +
                     std::to_string(ratio));
        const detail::MethodResult out = detail::Improve(name, ctx, params, in, target, 10);
        EXPECT_EQ(CheckSchedule(g, out.schedule, params.rule), "");
        EXPECT_EQ(CheckFaithful(Rewrite(g, out.schedule, params.rule).graph, &g), "");
        const detail::Evaluated e = detail::Evaluate(g, out.schedule, params);
        EXPECT_LE(e.peak, target);
        EXPECT_EQ(out.peak, e.peak);
        EXPECT_LE(e.recompute_cost, in.recompute_cost + 1e-9);
        EXPECT_DOUBLE_EQ(out.recompute_cost, e.recompute_cost);
        // The exact method may stop at its time limit, where its answer depends on the machine.
        if (out.status == Status::kTimeLimit) continue;
        const detail::MethodResult again = detail::Improve(name, ctx, params, in, target, 10);
        EXPECT_EQ(again.schedule, out.schedule);
      }
    }
  }
}

TEST(Improvers, LeaveAScheduleOverTheTargetOverNoCostlierOrFitIt) {
  std::mt19937_64 rng(29);
  const Graph g = testing::TrainingLikeGraph(rng, {});
  RematParams params;
  params.alignment = 1;
  const detail::Context ctx(g, params);
  const detail::MethodResult in = Described(g, ctx.start, params);
  const Bytes target = in.peak - 1;
  for (std::string_view name : kImproverNames) {
    SCOPED_TRACE(std::string(name));
    const detail::MethodResult out = detail::Improve(name, ctx, params, in, target, 10);
    EXPECT_EQ(CheckSchedule(g, out.schedule, params.rule), "");
    if (out.schedule != in.schedule) {
      EXPECT_LE(detail::Evaluate(g, out.schedule, params).peak, target);
    }
  }
}

}  // namespace
}  // namespace roam::remat
