// The GLPK layer: solving, status mapping, warm starts, time limits and the log sink.
#include "ilp/glpk.h"

#include <glpk.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace roam::ilp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// max 5a + 4b + 3c s.t. 2a + 3b + c <= 5, 4a + b + 2c <= 11, 3a + 4b + 2c <= 8, integers >= 0
// (written as min of the negation): optimum a=2, b=0, c=1 -> -13.
Problem SmallIp() {
  Problem p;
  int a = p.AddColumn(ColumnKind::kInteger, 0, kInf, -5);
  int b = p.AddColumn(ColumnKind::kInteger, 0, kInf, -4);
  int c = p.AddColumn(ColumnKind::kInteger, 0, kInf, -3);
  std::vector<std::pair<int, double>> r1 = {{a, 2}, {b, 3}, {c, 1}};
  std::vector<std::pair<int, double>> r2 = {{a, 4}, {b, 1}, {c, 2}};
  std::vector<std::pair<int, double>> r3 = {{a, 3}, {b, 4}, {c, 2}};
  p.AddRow(r1, -kInf, 5);
  p.AddRow(r2, -kInf, 11);
  p.AddRow(r3, -kInf, 8);
  return p;
}

TEST(Glpk, SolvesASmallIntegerProgramToOptimality) {
  Problem p = SmallIp();
  SolveResult r = p.Solve({});
  EXPECT_EQ(r.call, CallOutcome::kOk);
  EXPECT_EQ(r.status, ModelStatus::kOptimal);
  ASSERT_TRUE(r.has_solution);
  EXPECT_DOUBLE_EQ(r.objective, -13);
  EXPECT_DOUBLE_EQ(r.best_bound, -13);
  EXPECT_EQ(r.gap, 0.0);
  EXPECT_EQ(r.values, (std::vector<double>{2, 0, 1}));
}

// The root LP's row duals: min x + 3y subject to x + y >= 2 and y >= 0.5 has the optimum
// x = 1.5, y = 0.5 (objective 3); the first row's dual is 1 and the second's 2, and they prove
// the objective by weak duality (2 * 1 + 0.5 * 2).
TEST(Glpk, ReturnsTheRootLpsRowDuals) {
  Problem p;
  const int x = p.AddColumn(ColumnKind::kContinuous, 0, 10, 1.0);
  const int y = p.AddColumn(ColumnKind::kContinuous, 0, 10, 3.0);
  p.AddRow(std::vector<std::pair<int, double>>{{x, 1.0}, {y, 1.0}}, 2.0, kInf);
  p.AddRow(std::vector<std::pair<int, double>>{{y, 1.0}}, 0.5, kInf);
  const SolveResult r = p.Solve({});
  ASSERT_EQ(r.status, ModelStatus::kOptimal);
  ASSERT_EQ(r.row_duals.size(), 2u);
  EXPECT_NEAR(r.row_duals[0], 1.0, 1e-9);
  EXPECT_NEAR(r.row_duals[1], 2.0, 1e-9);
  EXPECT_NEAR(2 * r.row_duals[0] + 0.5 * r.row_duals[1], r.objective, 1e-9);
  // Optimal duals prove the optimum; any others prove less, never more: (1, 0) proves 2 (x's
  // reduced cost 0, y's 2, both least at 0); (5, -4) is clipped to (5, 0), whose reduced costs
  // -4 and -2 are least at the upper bounds, 10: 10 - 40 - 20.
  EXPECT_NEAR(p.DualBound(r.row_duals), 3.0, 1e-6);
  EXPECT_NEAR(p.DualBound(std::vector<double>{1.0, 0.0}), 2.0, 1e-6);
  EXPECT_NEAR(p.DualBound(std::vector<double>{5.0, -4.0}), -50.0, 1e-6);
  // A negative reduced cost on a column without an upper bound proves nothing.
  Problem q;
  const int z = q.AddColumn(ColumnKind::kContinuous, 0, kInf, 1.0);
  q.AddRow(std::vector<std::pair<int, double>>{{z, 1.0}}, 1.0, kInf);
  EXPECT_EQ(q.DualBound(std::vector<double>{2.0}), -kInf);
  EXPECT_NEAR(q.DualBound(std::vector<double>{1.0}), 1.0, 1e-6);
}

TEST(Glpk, ReportsInfeasibleModels) {
  Problem p;
  int x = p.AddColumn(ColumnKind::kBinary, 0, 1);
  int y = p.AddColumn(ColumnKind::kBinary, 0, 1);
  std::vector<std::pair<int, double>> sum = {{x, 1}, {y, 1}};
  p.AddRow(sum, 3, kInf);
  SolveResult r = p.Solve({});
  EXPECT_EQ(r.call, CallOutcome::kOk);
  EXPECT_EQ(r.status, ModelStatus::kInfeasible);
  EXPECT_FALSE(r.has_solution);
}

TEST(Glpk, IntegerInfeasibilityBehindAFeasibleRelaxationIsFound) {
  Problem p;  // 2x = 1 has the LP solution 0.5 but no integer one
  int x = p.AddColumn(ColumnKind::kInteger, 0, 10, 1);
  std::vector<std::pair<int, double>> row = {{x, 2}};
  p.AddRow(row, 1, 1);
  SolveResult r = p.Solve({});
  EXPECT_EQ(r.status, ModelStatus::kInfeasible);
}

TEST(Glpk, MapsEveryReturnCodeInOnePlace) {
  EXPECT_EQ(MapGlpkStatus(0, GLP_OPT, false, false).status, ModelStatus::kOptimal);
  EXPECT_EQ(MapGlpkStatus(0, GLP_NOFEAS, false, false).status, ModelStatus::kInfeasible);
  EXPECT_EQ(MapGlpkStatus(GLP_ETMLIM, GLP_FEAS, false, false).status,
            ModelStatus::kFeasibleTimeLimit);
  EXPECT_EQ(MapGlpkStatus(GLP_ETMLIM, GLP_UNDEF, false, false).status,
            ModelStatus::kNoSolutionTimeLimit);
  EXPECT_EQ(MapGlpkStatus(GLP_EMIPGAP, GLP_FEAS, false, false).status, ModelStatus::kOptimal);
  EXPECT_EQ(MapGlpkStatus(GLP_ESTOP, GLP_FEAS, true, true).status, ModelStatus::kOptimal);
  EXPECT_EQ(MapGlpkStatus(GLP_ESTOP, GLP_FEAS, true, false).status,
            ModelStatus::kFeasibleTimeLimit);
  EXPECT_EQ(MapGlpkStatus(GLP_ESTOP, GLP_UNDEF, false, false).call, CallOutcome::kError);
  EXPECT_EQ(MapGlpkStatus(GLP_ENOPFS, GLP_UNDEF, false, false).status, ModelStatus::kInfeasible);
  for (int code : {GLP_EBOUND, GLP_EROOT, GLP_EFAIL, GLP_ENODFS}) {
    MappedStatus m = MapGlpkStatus(code, GLP_UNDEF, false, false);
    EXPECT_EQ(m.call, CallOutcome::kError) << code;
    EXPECT_EQ(m.status, ModelStatus::kError) << code;
  }
}

TEST(Glpk, AWarmStartIsReturnedWhenTheTimeLimitLeavesNoRoom) {
  Problem p = SmallIp();
  SolveParams params;
  params.time_limit_s = 0.0;
  std::vector<double> warm = {1, 1, 0};  // feasible, objective -9
  SolveResult r = p.Solve(params, std::span<const double>(warm));
  ASSERT_TRUE(r.has_solution);
  EXPECT_LE(r.objective, -9);
  if (r.status != ModelStatus::kOptimal) {
    EXPECT_EQ(r.status, ModelStatus::kFeasibleTimeLimit);
    EXPECT_LT(r.best_bound, r.objective);
    EXPECT_GT(r.gap, 0.0);
  }
}

TEST(Glpk, AnOptimalWarmStartIsKeptAndProven) {
  Problem p = SmallIp();
  std::vector<double> warm = {2, 0, 1};
  SolveResult r = p.Solve({}, std::span<const double>(warm));
  EXPECT_EQ(r.status, ModelStatus::kOptimal);
  EXPECT_DOUBLE_EQ(r.objective, -13);
}

TEST(Glpk, RejectsAnInfeasibleWarmStart) {
  Problem p = SmallIp();
  std::vector<double> warm = {3, 0, 0};  // 2*3 > 5
  EXPECT_THROW(p.Solve({}, std::span<const double>(warm)), std::invalid_argument);
}

// GLPK calls abort() on a failed internal check. The trap turns that into a false return, and
// the thread can solve again afterwards: its freed environment is recreated on first use.
// (Real failures come from numerical trouble deep in the simplex; an out-of-range column is
// the same glp_error path, reachable in one call.)
TEST(Glpk, AFailedGlpkCheckIsTrappedAndTheThreadSolvesAgain) {
  for (int round = 0; round < 2; ++round) {
    testing::internal::CaptureStdout();  // GLPK prints the failed check before the hook runs
    const bool ok = detail::RunTrapped([] {
      glp_prob* prob = glp_create_prob();
      glp_add_cols(prob, 1);
      glp_set_col_bnds(prob, 7, GLP_FX, 0.0, 0.0);  // column 7 of 1: a failed check
    });
    const std::string printed = testing::internal::GetCapturedStdout();
    EXPECT_FALSE(ok);
    EXPECT_NE(printed.find("out of range"), std::string::npos) << printed;
    SolveResult r = SmallIp().Solve({});
    EXPECT_EQ(r.status, ModelStatus::kOptimal) << "round " << round;
    EXPECT_DOUBLE_EQ(r.objective, -13.0);
  }
  EXPECT_TRUE(detail::RunTrapped([] { glp_delete_prob(glp_create_prob()); }));
}

TEST(Glpk, RoutesGlpkOutputToTheLogSinkOnly) {
  Problem p = SmallIp();
  SolveParams params;
  params.log_level = 2;
  std::vector<std::string> lines;
  params.log = [&](std::string_view line) { lines.emplace_back(line); };
  testing::internal::CaptureStdout();
  p.Solve(params);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "");
  ASSERT_FALSE(lines.empty());
  bool progress = false;  // branch-and-cut progress lines end in whole lines, no newline
  for (const auto& l : lines) {
    progress |= l.find("mip =") != std::string::npos;
    EXPECT_EQ(l.find('\n'), std::string::npos);
  }
  EXPECT_TRUE(progress);
}

TEST(Glpk, RepeatedColumnsInARowAreSummed) {
  Problem p;
  int x = p.AddColumn(ColumnKind::kInteger, 0, 10, -1);
  std::vector<std::pair<int, double>> row = {{x, 1}, {x, 1}, {x, 1}};  // 3x <= 7
  p.AddRow(row, -kInf, 7);
  EXPECT_EQ(p.num_nonzeros(), 1);
  SolveResult r = p.Solve({});
  EXPECT_DOUBLE_EQ(r.objective, -2);
}

TEST(Glpk, StopsAtATargetObjective) {
  Problem p = SmallIp();
  SolveParams params;
  params.stop_at_objective = -9;  // any solution at least this good will do
  std::vector<double> warm = {1, 1, 0};
  SolveResult r = p.Solve(params, std::span<const double>(warm));
  ASSERT_TRUE(r.has_solution);
  EXPECT_LE(r.objective, -9);
}

// A multi-dimensional knapsack of 40 binaries, minimised as the negated value: hard enough
// that branch-and-bound needs many nodes with cuts off.
Problem Knapsack() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> value(10, 60), weight(5, 40);
  Problem p;
  std::vector<int> x;
  for (int i = 0; i < 40; ++i) x.push_back(p.AddColumn(ColumnKind::kBinary, 0, 1, -value(rng)));
  for (int r = 0; r < 5; ++r) {
    std::vector<std::pair<int, double>> row;
    for (int col : x) row.push_back({col, weight(rng)});
    p.AddRow(row, -kInf, 200);
  }
  return p;
}

// Knapsack's solve with cuts off, so that branch and bound needs many nodes, and a time limit
// that never binds, so that the work limits a test sets decide.
SolveParams OnlyWorkLimits() {
  SolveParams params;
  params.cuts = false;
  params.time_limit_s = 600;
  return params;
}

TEST(Glpk, ANodeLimitGivesTheSameAnswerEveryTimeAndReadsAsATimeLimit) {
  SolveParams params = OnlyWorkLimits();
  params.max_nodes = 5;
  SolveResult first = Knapsack().Solve(params), second = Knapsack().Solve(params);
  EXPECT_TRUE(first.work_limited);
  EXPECT_NE(first.status, ModelStatus::kOptimal);
  EXPECT_EQ(first.status, second.status);
  EXPECT_EQ(first.has_solution, second.has_solution);
  EXPECT_EQ(first.values, second.values);
  EXPECT_EQ(first.best_bound, second.best_bound);
  params.max_nodes = 0;
  SolveResult whole = Knapsack().Solve(params);
  EXPECT_EQ(whole.status, ModelStatus::kOptimal);
  EXPECT_FALSE(whole.work_limited);
  if (first.has_solution) {
    EXPECT_GE(first.objective, whole.objective - 1e-9);
  }
  EXPECT_LE(first.best_bound, whole.objective + 1e-9);
}

// The whole solve's iteration limit counts the root LP's iterations and every node's: it stops
// branch and bound after the same work every time, past the root, and the work is reported.
TEST(Glpk, AWholeSolveIterationLimitStopsBranchAndBoundAfterTheSameWorkEveryTime) {
  SolveParams params = OnlyWorkLimits();
  const SolveResult whole = Knapsack().Solve(params);
  ASSERT_EQ(whole.status, ModelStatus::kOptimal);
  EXPECT_FALSE(whole.work_limited);
  ASSERT_GT(whole.nodes, 20);  // a real search, so half its iterations end inside the tree
  ASSERT_GT(whole.lp_iterations, whole.nodes);
  params.max_total_lp_iterations = whole.lp_iterations / 2;
  const SolveResult first = Knapsack().Solve(params), second = Knapsack().Solve(params);
  EXPECT_TRUE(first.work_limited);
  EXPECT_NE(first.status, ModelStatus::kOptimal);
  EXPECT_GE(first.lp_iterations, params.max_total_lp_iterations);
  EXPECT_LT(first.lp_iterations, whole.lp_iterations);
  EXPECT_GT(first.nodes, 1);  // stopped inside the tree, not in the root LP
  EXPECT_EQ(first.lp_iterations, second.lp_iterations);
  EXPECT_EQ(first.nodes, second.nodes);
  EXPECT_EQ(first.status, second.status);
  EXPECT_EQ(first.values, second.values);
  EXPECT_EQ(first.best_bound, second.best_bound);
  EXPECT_LE(first.best_bound, whole.objective + 1e-9);
  // A limit below the root LP's iterations stops the root LP, as max_lp_iterations does.
  params.presolve = false;
  params.max_total_lp_iterations = 1;
  const SolveResult root = Knapsack().Solve(params);
  EXPECT_TRUE(root.work_limited);
  EXPECT_EQ(root.status, ModelStatus::kNoSolutionTimeLimit);
}

// A work limit is an iteration limit of work / nonzeros for the model at hand, so a larger model
// gets fewer iterations for the same work; the tighter of it and the iteration limit decides.
TEST(Glpk, AWorkLimitIsAnIterationLimitScaledByTheModelsNonzeros) {
  SolveParams params = OnlyWorkLimits();
  const SolveResult whole = Knapsack().Solve(params);
  ASSERT_EQ(whole.status, ModelStatus::kOptimal);
  const std::int64_t nonzeros = Knapsack().num_nonzeros();
  ASSERT_EQ(nonzeros, 200);
  const std::int64_t iterations = whole.lp_iterations / 2;
  auto solve = [&](std::int64_t work, std::int64_t total_iterations) {
    SolveParams p = params;
    p.max_lp_work = work;
    p.max_total_lp_iterations = total_iterations;
    return Knapsack().Solve(p);
  };
  const SolveResult by_iterations = solve(0, iterations);
  // Work is rounded down to whole iterations.
  const SolveResult by_work = solve(iterations * nonzeros + nonzeros - 1, 0);
  ASSERT_TRUE(by_iterations.work_limited);
  EXPECT_TRUE(by_work.work_limited);
  EXPECT_NE(by_work.status, ModelStatus::kOptimal);
  EXPECT_EQ(by_work.lp_iterations, by_iterations.lp_iterations);
  EXPECT_EQ(by_work.nodes, by_iterations.nodes);
  EXPECT_EQ(by_work.values, by_iterations.values);
  EXPECT_EQ(by_work.best_bound, by_iterations.best_bound);
  // The tighter limit decides, whichever it is.
  const SolveResult fewer = solve(0, iterations / 2);
  EXPECT_EQ(solve(iterations * nonzeros, iterations / 2).lp_iterations, fewer.lp_iterations);
  EXPECT_EQ(solve((iterations / 2) * nonzeros, iterations).lp_iterations, fewer.lp_iterations);
  // Ample work changes nothing.
  const SolveResult ample = solve(whole.lp_iterations * nonzeros * 2, 0);
  EXPECT_FALSE(ample.work_limited);
  EXPECT_EQ(ample.values, whole.values);
  EXPECT_EQ(ample.lp_iterations, whole.lp_iterations);
  // Less work than one iteration still allows one: a limit, never "no limit".
  params.presolve = false;
  const SolveResult root = solve(1, 0);
  EXPECT_TRUE(root.work_limited);
  EXPECT_EQ(root.status, ModelStatus::kNoSolutionTimeLimit);
}

TEST(Glpk, AnIterationLimitStopsTheRootLpAsATimeLimitWithoutASolution) {
  SolveParams params;
  params.presolve = false;
  params.max_lp_iterations = 1;
  SolveResult r = Knapsack().Solve(params);
  EXPECT_TRUE(r.work_limited);
  EXPECT_EQ(r.call, CallOutcome::kOk);
  EXPECT_EQ(r.status, ModelStatus::kNoSolutionTimeLimit);
  EXPECT_FALSE(r.has_solution);
  // With a warm start, the warm start stands, as at a time limit.
  std::vector<double> none(40, 0.0);
  SolveResult warm = Knapsack().Solve(params, std::span<const double>(none));
  EXPECT_EQ(warm.status, ModelStatus::kFeasibleTimeLimit);
  EXPECT_TRUE(warm.from_incumbent);
}

}  // namespace
}  // namespace roam::ilp
