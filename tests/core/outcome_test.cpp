#include "core/outcome.h"

#include <gtest/gtest.h>

#include "ilp/glpk.h"
#include "layout/layout.h"
#include "remat/status.h"

namespace roam {
namespace {

// The labels users read in summaries and CSVs.
TEST(Outcome, LabelsAreTheDocumentedWords) {
  EXPECT_EQ(ToString(Outcome::kOptimal), "optimal");
  EXPECT_EQ(ToString(Outcome::kTimeLimited), "time-limited");
  EXPECT_EQ(ToString(Outcome::kHeuristic), "heuristic");
}

TEST(Outcome, WorseIsOptimalOnlyWhenBothAreAndTimeLimitedWhenEitherIs) {
  const Outcome all[] = {Outcome::kOptimal, Outcome::kHeuristic, Outcome::kTimeLimited};
  for (Outcome a : all)
    for (Outcome b : all) {
      const Outcome w = Worse(a, b);
      EXPECT_EQ(w, Worse(b, a));
      EXPECT_EQ(w == Outcome::kOptimal, a == Outcome::kOptimal && b == Outcome::kOptimal);
      EXPECT_EQ(w == Outcome::kTimeLimited,
                a == Outcome::kTimeLimited || b == Outcome::kTimeLimited);
    }
  // Folding from heuristic drops the parts' proofs but keeps their improvements.
  EXPECT_EQ(Worse(Outcome::kHeuristic, Outcome::kOptimal), Outcome::kHeuristic);
}

TEST(Outcome, OneRuleForEverySolversStatus) {
  // A proof wins whatever the values.
  EXPECT_EQ(OutcomeOf(ilp::ModelStatus::kOptimal, 10, 10), Outcome::kOptimal);
  EXPECT_EQ(OutcomeOf(layout::LayoutStatus::kOptimal, 10, 10), Outcome::kOptimal);
  EXPECT_EQ(OutcomeOf(remat::Status::kOptimal, 10, 10), Outcome::kOptimal);
  // Without one: time-limited only for a strictly lower value.
  EXPECT_EQ(OutcomeOf(ilp::ModelStatus::kFeasibleTimeLimit, 9, 10), Outcome::kTimeLimited);
  EXPECT_EQ(OutcomeOf(ilp::ModelStatus::kFeasibleTimeLimit, 10, 10), Outcome::kHeuristic);
  EXPECT_EQ(OutcomeOf(layout::LayoutStatus::kTimeLimit, 9, 10), Outcome::kTimeLimited);
  EXPECT_EQ(OutcomeOf(layout::LayoutStatus::kTimeLimit, 11, 10), Outcome::kHeuristic);
  EXPECT_EQ(OutcomeOf(remat::Status::kTimeLimit, 9, 10), Outcome::kTimeLimited);
}

}  // namespace
}  // namespace roam
