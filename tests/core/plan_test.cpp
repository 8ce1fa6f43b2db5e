#include "core/plan.h"

#include <gtest/gtest.h>

#include "core/io.h"
#include "tests/support/test_data.h"

namespace roam {
namespace {

class PlanValidation : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = LoadGraph(testing::DataPath("tiny.graph.json"));
    model_ = BuildMemoryModel(graph_, 512);
    plan_ =
        AssemblePlan(graph_, model_, graph_.program_order, std::vector<Bytes>{0, 1536, 2048}, 0.0);
  }
  std::string Problem() const { return ValidatePlan(graph_, plan_); }
  Graph graph_;
  MemoryModel model_;
  Plan plan_;
};

TEST_F(PlanValidation, AssembledPlanIsValidAndSummarised) {
  EXPECT_EQ(Problem(), "");
  EXPECT_EQ(plan_.summary.theoretical_peak, 3072);
  EXPECT_EQ(plan_.summary.actual_peak, 3072);
  EXPECT_EQ(plan_.summary.total_peak, 6144);
  EXPECT_DOUBLE_EQ(plan_.summary.fragmentation, 0.0);
}

TEST_F(PlanValidation, ReportsFragmentationOfALooseLayout) {
  plan_ =
      AssemblePlan(graph_, model_, graph_.program_order, std::vector<Bytes>{0, 1536, 3072}, 0.0);
  EXPECT_EQ(Problem(), "");
  EXPECT_EQ(plan_.summary.actual_peak, 4096);
  EXPECT_DOUBLE_EQ(plan_.summary.fragmentation, 0.25);
}

TEST_F(PlanValidation, RejectsOrderBreakingADependency) {
  std::swap(plan_.order[0], plan_.order[1]);
  EXPECT_NE(Problem().find("order"), std::string::npos);
}

TEST_F(PlanValidation, RejectsOverlapOfBuffersSharingAStep) {
  plan_.buffers[2].offset = 1024;  // grad_w overlaps the activation at step 3
  plan_.summary.actual_peak = 2048;
  EXPECT_NE(Problem().find("overlap"), std::string::npos);
}

TEST_F(PlanValidation, RejectsMisalignedOffset) {
  plan_.buffers[1].offset = 1600;
  EXPECT_NE(Problem().find("alignment"), std::string::npos);
}

TEST_F(PlanValidation, RejectsWrongSizeOrLifetime) {
  Plan wrong = plan_;
  wrong.buffers[0].size = 1024;
  EXPECT_NE(ValidatePlan(graph_, wrong).find("size"), std::string::npos);
  wrong = plan_;
  wrong.buffers[0].end = 2;
  EXPECT_NE(ValidatePlan(graph_, wrong).find("lifetime"), std::string::npos);
}

TEST_F(PlanValidation, RejectsMissingDuplicateAndPersistentBuffers) {
  Plan wrong = plan_;
  wrong.buffers.pop_back();
  EXPECT_NE(ValidatePlan(graph_, wrong).find("no buffer"), std::string::npos);
  wrong = plan_;
  wrong.buffers.push_back(wrong.buffers[0]);
  EXPECT_NE(ValidatePlan(graph_, wrong).find("more than one"), std::string::npos);
  wrong = plan_;
  wrong.buffers[0].tensor = 0;  // the weight: persistent
  EXPECT_NE(ValidatePlan(graph_, wrong).find("persistent"), std::string::npos);
  wrong = plan_;
  wrong.buffers[0].tensor = 3;  // the relu_ view, not the storage root
  EXPECT_NE(ValidatePlan(graph_, wrong).find("root"), std::string::npos);
}

TEST_F(PlanValidation, RejectsSummaryThatDoesNotMatch) {
  plan_.summary.theoretical_peak = 1;
  EXPECT_NE(Problem().find("theoretical_peak"), std::string::npos);
}

}  // namespace
}  // namespace roam
