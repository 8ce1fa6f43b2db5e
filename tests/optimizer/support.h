// What the optimizer's tests share: presets by name, and the checks every result must pass.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/config.h"
#include "core/plan.h"
#include "gen/generate.h"
#include "optimizer/optimizer.h"

namespace roam::testing {

inline Graph Preset(const std::string& name, std::vector<std::string> overrides = {}) {
  return gen::GenerateGraph(
      config::LoadConfig(std::string(ROAM_CONFIGS_DIR) + "/" + name, overrides));
}

// Valid, never worse than either baseline, labels true by docs/optimizer.md's definitions, and
// the leaf counts adding up.
inline void ExpectTruthful(const Graph& graph, const OptimizeResult& r) {
  EXPECT_EQ(ValidatePlan(graph, r.plan), "");
  const PlanSummary& s = r.plan.summary;
  EXPECT_LE(r.lower_bound, s.theoretical_peak);
  if (r.order_outcome == Outcome::kOptimal) {
    EXPECT_EQ(s.theoretical_peak, r.lower_bound) << "an optimal order needs the bound met";
  }
  if (r.layout_outcome == Outcome::kOptimal) {
    EXPECT_EQ(s.actual_peak, s.theoretical_peak) << "an optimal layout has no fragmentation";
  }
  if (s.theoretical_peak == r.lower_bound) {
    EXPECT_EQ(r.order_outcome, Outcome::kOptimal);
  }
  EXPECT_LE(s.total_peak, r.baselines[1].summary.total_peak);
  EXPECT_LE(s.total_peak, r.baselines[0].summary.total_peak);
  if (r.mode == OptimizeMode::kRoam) {
    const LeafCounts& c = r.leaves;
    EXPECT_EQ(c.sent_to_solver + c.skipped_by_bound + c.not_started + c.single_op, c.total)
        << "every leaf is sent, skipped, not started or a single op";
    EXPECT_LE(c.proved_optimal + c.time_limited + c.work_limited + c.solver_errors,
              c.sent_to_solver);
    EXPECT_LE(c.layouts_proved_optimal + c.layouts_time_limited + c.layouts_work_limited,
              c.layouts_solved);
    EXPECT_LE(c.layouts_solved, c.total);
    if (c.time_limited > 0 || c.not_started > 0 || c.layouts_time_limited > 0) {
      EXPECT_TRUE(r.time_limit_hit) << "a part the clock stopped is a time limit hit";
    }
  }
}

}  // namespace roam::testing
