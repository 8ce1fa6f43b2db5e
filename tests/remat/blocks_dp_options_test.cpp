// The budget split's options (remat/blocks_dp_options.cpp): what each option is measured to
// cost, free and keep off by the greedy's incremental state is what roam's memory model says of
// the base with that option's copies, on random training graphs.
#include "remat/blocks_dp_options.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "core/types.h"
#include "remat/internal.h"
#include "remat/remat.h"
#include "tests/support/training_graph.h"

namespace roam::remat {
namespace {

using detail::Attached;
using detail::GroupedBase;
using detail::GroupOption;

// The base with groups of two forward ops each, spans from a group's first op to the last op
// that reads what it made, and each step's region the latest-starting span holding it.
GroupedBase MakeBase(const Graph& g, const RematParams& params) {
  GroupedBase base;
  base.schedule = detail::BaseSchedule(g, params);
  base.profile = detail::Evaluate(g, base.schedule, params).profile;
  base.profile.push_back(0);
  const std::vector<char> forward = detail::ForwardOps(g, base.schedule, params);
  base.group_of_op.assign(U(g.num_ops()), -1);
  int count = 0, groups = 0;
  for (OpId op : base.schedule) {
    if (!forward[U(op)]) continue;
    if (count++ % 2 == 0) ++groups;
    base.group_of_op[U(op)] = groups - 1;
  }
  std::vector<Step> first(U(groups), std::numeric_limits<Step>::max()), last(U(groups), -1);
  for (size_t x = 0; x < base.schedule.size(); ++x) {
    const OpId op = base.schedule[x];
    const auto s = static_cast<Step>(x);
    if (const int grp = base.group_of_op[U(op)]; grp >= 0) {
      first[U(grp)] = std::min(first[U(grp)], s);
      last[U(grp)] = std::max(last[U(grp)], s);
    }
    for (TensorId t : g.ops[U(op)].inputs) {
      const OpId p = g.tensors[U(t)].producer;
      if (p != kNoOp && base.group_of_op[U(p)] >= 0)
        last[U(base.group_of_op[U(p)])] = std::max(last[U(base.group_of_op[U(p)])], s);
    }
  }
  for (int grp = 0; grp < groups; ++grp) base.order.push_back(grp);  // forward order already
  base.region.assign(base.schedule.size() + 1, -1);
  for (size_t i = 0; i < base.order.size(); ++i)
    for (Step s = first[i]; s <= last[i]; ++s) base.region[U(s)] = static_cast<int>(i);
  return base;
}

// The copies of a schedule made of base plus copies, attached to the next original step.
Attached CopiesOf(const Schedule& schedule, int num_ops) {
  Attached copies;
  std::vector<char> seen(U(num_ops), 0);
  std::vector<OpId> pending;
  Step original = 0;
  for (OpId op : schedule) {
    if (seen[U(op)]) {
      pending.push_back(op);
      continue;
    }
    seen[U(op)] = 1;
    for (OpId p : pending) copies.emplace_back(original, p);
    pending.clear();
    ++original;
  }
  for (OpId p : pending) copies.emplace_back(original, p);
  return copies;
}

TEST(BudgetSplitOptions, MeasuredAsRoamsMemoryModelSaysOnRandomTrainingGraphs) {
  std::mt19937_64 rng(23);
  int with_copies = 0;
  for (int trial = 0; trial < 10; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    testing::TrainingGraphOptions o;
    o.layers = 3 + trial % 4;
    const Graph g = testing::TrainingLikeGraph(rng, o);
    RematParams params;
    params.alignment = 1;
    params.blocks_dp.targets = 4;
    const GroupedBase base = MakeBase(g, params);
    const size_t n = base.schedule.size();
    const detail::Evaluated plain = detail::Evaluate(g, base.schedule, params);
    // The incumbent's own copies: the greedy's, from the same base.
    const auto budget = static_cast<Bytes>(static_cast<double>(plain.peak) * 0.7);
    const Attached own =
        CopiesOf(detail::Greedy(g, base.schedule, budget, params).schedule, g.num_ops());
    const detail::GreedyTools greedy(g, params);
    detail::OptionMeasurer measurer(g, params, greedy, base);
    for (size_t i = 0; i < base.order.size(); ++i) {
      SCOPED_TRACE("rank " + std::to_string(i));
      const std::vector<GroupOption> options = measurer.Measure(i, own, plain.peak_step);
      ASSERT_FALSE(options.empty());
      EXPECT_TRUE(options[0].copies.empty());
      EXPECT_EQ(options[0].cost, 0.0);
      for (size_t a = 0; a < options.size(); ++a) {
        const GroupOption& opt = options[a];
        std::vector<Step> tag;
        const Schedule assembled = detail::Assemble(base.schedule, {&opt.copies}, &tag);
        ASSERT_EQ(CheckSchedule(g, assembled, params.rule), "");
        EXPECT_NEAR(opt.cost, detail::RecomputeCost(g, assembled), 1e-9);
        // Held per base step by the reference: the most live bytes at it and at its copies.
        const std::vector<Bytes> profile = detail::Evaluate(g, assembled, params).profile;
        std::vector<Bytes> held(n + 1, 0);
        Bytes run = 0;
        for (size_t s = 0; s < tag.size(); ++s) {
          run = std::max(run, profile[s]);
          if (tag[s] < 0) continue;
          held[U(tag[s])] = run;
          run = 0;
        }
        held[n] = run;
        Bytes kept_off = std::numeric_limits<Bytes>::max();
        bool deeper = false;
        for (size_t x = 0; x <= n; ++x) {
          const int r = base.region[x];
          const bool near = r == static_cast<int>(i) || r == static_cast<int>(i) + 1;
          EXPECT_EQ(opt.freed[x], near ? base.profile[x] - held[x] : 0) << "step " << x;
          if (r > static_cast<int>(i) + 1) {
            deeper = true;
            kept_off = std::min(kept_off, base.profile[x] - held[x]);
          }
        }
        EXPECT_EQ(opt.kept_off, deeper ? std::max<Bytes>(0, kept_off) : 0);
        std::vector<OpId> recomputed;
        for (const auto& [x, op] : opt.copies) recomputed.push_back(op);
        std::sort(recomputed.begin(), recomputed.end());
        EXPECT_EQ(opt.recomputed, recomputed);
        for (const auto& [p, size] : opt.reads) {
          EXPECT_GE(base.group_of_op[U(p)], 0);
          EXPECT_NE(base.group_of_op[U(p)], base.order[i]);
          EXPECT_GT(size, 0);
        }
        for (size_t b = 0; b < a; ++b)
          EXPECT_FALSE(options[b].kept_off == opt.kept_off && options[b].freed == opt.freed &&
                       options[b].cost <= opt.cost);
        if (!opt.copies.empty()) ++with_copies;
      }
    }
  }
  EXPECT_GT(with_copies, 0);
}

}  // namespace
}  // namespace roam::remat
