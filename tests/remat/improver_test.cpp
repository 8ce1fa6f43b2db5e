// The contract every improver of remat (RematParams: kImproverNames) is held to, run through
// the same registry the presets use: given a valid schedule within the target, it returns a
// valid, faithful schedule, no costlier, within the target, and the same one every time; one
// over the target comes back unchanged or within it.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "remat/context.h"
#include "remat/internal.h"
#include "remat/methods.h"
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
        const detail::MethodResult out =
            detail::Improve(name, ctx, params, in, target, Deadline(10));
        EXPECT_EQ(CheckSchedule(g, out.schedule, params.rule), "");
        EXPECT_EQ(CheckFaithful(Rewrite(g, out.schedule, params.rule).graph, &g), "");
        const detail::Evaluated e = detail::Evaluate(g, out.schedule, params);
        EXPECT_LE(e.peak, target);
        EXPECT_EQ(out.peak, e.peak);
        EXPECT_LE(e.recompute_cost, in.recompute_cost + 1e-9);
        EXPECT_DOUBLE_EQ(out.recompute_cost, e.recompute_cost);
        // The exact method may stop at its time limit, where its answer depends on the machine.
        if (out.status == Status::kTimeLimit) continue;
        const detail::MethodResult again =
            detail::Improve(name, ctx, params, in, target, Deadline(10));
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
    const detail::MethodResult out = detail::Improve(name, ctx, params, in, target, Deadline(10));
    EXPECT_EQ(CheckSchedule(g, out.schedule, params.rule), "");
    if (out.schedule != in.schedule) {
      EXPECT_LE(detail::Evaluate(g, out.schedule, params).peak, target);
    }
  }
}

// The plan's memo (detail::PlanMemo) gives a repeatable builder's schedule again where the plan
// built it before at that target in that context (a fit.alone builder's loop retracing best's).
// So such a builder must give that schedule again whatever ran before; the others are built
// every time, and another context or target is another entry.
TEST(Builders, ARepeatableBuilderIsBuiltOncePerTargetAndContext) {
  std::mt19937_64 rng(30);
  const Graph g = testing::TrainingLikeGraph(rng, {});
  RematParams params;
  params.alignment = 1;
  const detail::Context ctx(g, params), other(g, params);
  const Bytes target = ctx.no_remat_peak * 8 / 10;
  int repeatable = 0;
  for (std::string_view name : kBuilderNames) {
    SCOPED_TRACE(std::string(name));
    const detail::Named& builder = detail::Find(name);
    detail::PlanMemo memo;
    detail::Shared shared;
    shared.memo = &memo;
    const Preset preset{{std::string(name)}, {}};
    auto run = [&](const detail::Context& c, Bytes t) {
      Schedule greedy_state;
      detail::Call call{c, params, greedy_state, shared, true, t};
      return detail::RunPreset(call, preset, t);
    };
    const detail::MethodResult first = run(ctx, target);
    run(other, target);  // in between, as a fit loop's other builders run
    run(ctx, target - 1);
    const detail::MethodResult again = run(ctx, target);
    EXPECT_EQ(again.schedule, first.schedule);
    // Built alone, without the memo: the same schedule.
    Schedule greedy_state;
    detail::Shared none;
    detail::Call call{ctx, params, greedy_state, none, true, target};
    EXPECT_EQ(builder.build(call, target).schedule, first.schedule);
    if (builder.repeatable) {
      ++repeatable;
      EXPECT_EQ(memo.built.size(), 3u);  // (ctx, target), (other, target), (ctx, target - 1)
    } else {
      EXPECT_TRUE(memo.built.empty());
    }
  }
  EXPECT_GE(repeatable, 1);
}

}  // namespace
}  // namespace roam::remat
