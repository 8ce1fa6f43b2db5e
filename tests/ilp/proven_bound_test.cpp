// The branch and bound whose bounds GLPK's numerics cannot overstate (ilp/proven_bound.h):
// brute force on small random programs, monotone in its work, infeasibility proven, and never
// above the optimum whatever it is told is `enough`.
#include "ilp/proven_bound.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace roam::ilp {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A random program over binary columns: covering rows (>=) and capacity rows (<=) with
// coefficients spanning several orders of magnitude, as eviction rows in bytes do.
Problem RandomProgram(std::mt19937& rng, int columns, int rows) {
  Problem p;
  std::uniform_real_distribution<double> cost(0.0, 5.0), unit(0.0, 1.0);
  for (int j = 0; j < columns; ++j) p.AddColumn(ColumnKind::kBinary, 0, 1, cost(rng));
  for (int i = 0; i < rows; ++i) {
    std::vector<std::pair<int, double>> row;
    double sum = 0;
    for (int j = 0; j < columns; ++j) {
      if (unit(rng) < 0.5) continue;
      const double a = std::pow(10.0, 4 * unit(rng));  // 1 to 10^4
      row.emplace_back(j, a);
      sum += a;
    }
    if (row.empty()) continue;
    if (unit(rng) < 0.7)
      p.AddRow(row, sum * (0.2 + 0.7 * unit(rng)), kInf);
    else
      p.AddRow(row, -kInf, sum * (0.3 + 0.6 * unit(rng)));
  }
  return p;
}

// The optimum over every 0/1 assignment; nullopt where none is feasible.
std::optional<double> BruteForce(const Problem& p) {
  const int n = p.num_columns();
  std::optional<double> best;
  std::vector<double> x(static_cast<size_t>(n));
  for (int mask = 0; mask < (1 << n); ++mask) {
    for (int j = 0; j < n; ++j) x[static_cast<size_t>(j)] = (mask >> j) & 1;
    if (!p.CheckFeasible(x, 1e-9).empty()) continue;
    const double v = p.Objective(x);
    if (!best || v < *best) best = v;
  }
  return best;
}

TEST(ProvenBound, MatchesBruteForceOnSmallRandomPrograms) {
  std::mt19937 rng(7);
  int infeasible = 0, branched = 0;
  for (int trial = 0; trial < 150; ++trial) {
    const Problem p = RandomProgram(rng, 3 + trial % 9, 1 + trial % 6);
    const std::optional<double> optimum = BruteForce(p);
    ProvenBoundParams params;
    params.max_nodes = 100000;
    const ProvenBound b = ProveLowerBound(p, params);
    ASSERT_TRUE(b.complete) << "trial " << trial << ": " << b.message;
    branched += b.nodes > 1;
    if (!optimum) {
      ++infeasible;
      EXPECT_TRUE(b.infeasible) << "trial " << trial;
      EXPECT_EQ(b.bound, kInf);
      continue;
    }
    EXPECT_FALSE(b.infeasible) << "trial " << trial;
    ASSERT_TRUE(b.has_solution) << "trial " << trial;
    EXPECT_LE(b.bound, *optimum + 1e-9) << "trial " << trial;
    EXPECT_NEAR(b.bound, *optimum, 1e-6) << "trial " << trial;
    EXPECT_NEAR(b.objective, *optimum, 1e-9) << "trial " << trial;
    EXPECT_EQ(p.CheckFeasible(b.values, 1e-9), "");
    // Whichever columns it branches on first, the same optimum.
    params.branch_first.resize(static_cast<size_t>(p.num_columns()));
    for (char& first : params.branch_first) first = static_cast<char>(rng() % 2);
    const ProvenBound ordered = ProveLowerBound(p, params);
    ASSERT_TRUE(ordered.complete) << "trial " << trial;
    EXPECT_NEAR(ordered.bound, *optimum, 1e-6) << "trial " << trial;
    EXPECT_LE(ordered.bound, *optimum + 1e-9) << "trial " << trial;
  }
  // The trials exercise both proofs: of infeasibility, and of an optimum by branching.
  EXPECT_GE(infeasible, 5);
  EXPECT_GE(branched, 30);
}

// Each split replaces a leaf by two whose bounds are at least its own, so more nodes never
// prove less; and no work allowance, nor any `enough`, makes the bound exceed the optimum.
TEST(ProvenBound, IsMonotoneInItsWorkAndNeverAboveTheOptimum) {
  std::mt19937 rng(11);
  int rose = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const Problem p = RandomProgram(rng, 12, 5);
    const std::optional<double> optimum = BruteForce(p);
    if (!optimum) continue;
    double last = -kInf;
    for (std::int64_t nodes : {1, 3, 5, 9, 17, 33, 65, 1000}) {
      ProvenBoundParams params;
      params.max_nodes = nodes;
      const ProvenBound b = ProveLowerBound(p, params);
      EXPECT_GE(b.bound, last - 1e-12) << "trial " << trial << ", " << nodes << " nodes";
      EXPECT_LE(b.bound, *optimum + 1e-9) << "trial " << trial << ", " << nodes << " nodes";
      rose += b.bound > last + 1e-9 && last > -kInf;
      last = b.bound;
      for (double enough : {*optimum - 1, *optimum - 1e-3, *optimum, *optimum + 1}) {
        params.enough = enough;
        EXPECT_LE(ProveLowerBound(p, params).bound, *optimum + 1e-9)
            << "trial " << trial << ", enough " << enough;
      }
    }
  }
  EXPECT_GE(rose, 10);  // branching proves more than the LP on these
}

// The LP alone (one node) is the LP relaxation's optimum, proven from its duals.
TEST(ProvenBound, RefusesBranchFirstFlagsOfAnotherSize) {
  Problem p;
  p.AddColumn(ColumnKind::kBinary, 0, 1, 1.0);
  ProvenBoundParams params;
  params.branch_first = {1, 0};
  EXPECT_THROW(ProveLowerBound(p, params), std::invalid_argument);
}

TEST(ProvenBound, OneNodeIsTheLpRelaxation) {
  // min x + y + z with x + y >= 1, y + z >= 1, x + z >= 1 over binaries: the LP's optimum is
  // 1.5 (each one half), the integer optimum 2.
  Problem p;
  for (int j = 0; j < 3; ++j) p.AddColumn(ColumnKind::kBinary, 0, 1, 1.0);
  for (int j = 0; j < 3; ++j)
    p.AddRow(std::vector<std::pair<int, double>>{{j, 1.0}, {(j + 1) % 3, 1.0}}, 1.0, kInf);
  ProvenBoundParams one;
  const ProvenBound lp = ProveLowerBound(p, one);
  EXPECT_NEAR(lp.bound, 1.5, 1e-6);
  EXPECT_LE(lp.bound, 1.5);
  EXPECT_FALSE(lp.complete);
  ProvenBoundParams all;
  all.max_nodes = 100;
  const ProvenBound ip = ProveLowerBound(p, all);
  EXPECT_TRUE(ip.complete);
  EXPECT_NEAR(ip.bound, 2.0, 1e-6);
  EXPECT_NEAR(ip.objective, 2.0, 1e-12);
  // Told that 1.7 is enough, it stops once it proves that much (or more), and says so.
  all.enough = 1.7;
  const ProvenBound enough = ProveLowerBound(p, all);
  EXPECT_GE(enough.bound, 1.7 - 1e-6);
  EXPECT_LE(enough.bound, 2.0);
}

// Infeasible at the root LP, and infeasible only in integers (found by branching); an integer
// column wider than 0/1.
TEST(ProvenBound, ProvesInfeasibility) {
  Problem root;
  root.AddColumn(ColumnKind::kBinary, 0, 1, 1.0);
  root.AddColumn(ColumnKind::kBinary, 0, 1, 1.0);
  root.AddRow(std::vector<std::pair<int, double>>{{0, 1.0}, {1, 1.0}}, 3.0, kInf);
  const ProvenBound a = ProveLowerBound(root, {});
  EXPECT_TRUE(a.infeasible);
  EXPECT_TRUE(a.complete);
  EXPECT_EQ(a.nodes, 1);

  Problem integers;  // 2x = 7 over the integers 0..10
  integers.AddColumn(ColumnKind::kInteger, 0, 10, 1.0);
  integers.AddRow(std::vector<std::pair<int, double>>{{0, 2.0}}, 7.0, 7.0);
  ProvenBoundParams params;
  params.max_nodes = 10;
  const ProvenBound b = ProveLowerBound(integers, params);
  EXPECT_TRUE(b.infeasible);
  EXPECT_EQ(b.nodes, 3);  // the root at 3.5, then x <= 3 and x >= 4, both empty

  Problem wide;  // min x with 2x >= 7 over the integers 0..10: 4
  wide.AddColumn(ColumnKind::kInteger, 0, 10, 1.0);
  wide.AddRow(std::vector<std::pair<int, double>>{{0, 2.0}}, 7.0, kInf);
  const ProvenBound c = ProveLowerBound(wide, params);
  EXPECT_TRUE(c.complete);
  EXPECT_NEAR(c.bound, 4.0, 1e-6);
  EXPECT_EQ(c.values, std::vector<double>{4.0});
}

// Stopped by its iteration allowance, it still returns a bound no higher than the optimum;
// with none left even for the root, nothing is proven.
TEST(ProvenBound, OutOfWorkProvesOnlyWhatItSolved) {
  std::mt19937 rng(3);
  int roots_unsolved = 0;
  for (int trial = 0; trial < 20; ++trial) {
    const Problem p = RandomProgram(rng, 12, 6);
    const std::optional<double> optimum = BruteForce(p);
    for (std::int64_t iterations : {1, 2, 5, 20}) {
      ProvenBoundParams params;
      params.max_nodes = 1000;
      params.max_lp_iterations = iterations;
      const ProvenBound b = ProveLowerBound(p, params);
      if (optimum) {
        EXPECT_LE(b.bound, *optimum + 1e-9) << "trial " << trial;
      }
      if (!b.complete) {
        EXPECT_FALSE(b.infeasible);
      }
      // A root LP out of work proves nothing, and says so.
      const bool root_unsolved = b.bound == -std::numeric_limits<double>::infinity();
      EXPECT_EQ(b.message == "out of work before the root LP was solved", root_unsolved);
      roots_unsolved += root_unsolved;
    }
  }
  EXPECT_GE(roots_unsolved, 1);
}

}  // namespace
}  // namespace roam::ilp
