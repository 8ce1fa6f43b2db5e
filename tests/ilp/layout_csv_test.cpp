// MiniMalloc CSV problems: parsing, errors naming file, line and column, and the solution
// format (golden file).
#include "ilp/layout_csv.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/io.h"
#include "ilp/layout_ilp.h"
#include "tests/support/test_data.h"

namespace roam::ilp {
namespace {

std::string ErrorOf(const std::string& text) {
  try {
    ParseLayoutCsv(text, "p.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(LayoutCsv, ParsesRowsInAnyColumnOrder) {
  auto rows = ParseLayoutCsv("size,id,upper,lower\r\n8,x,5,2\n\n4,y,3,0\n", "p.csv");
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, "x");
  EXPECT_EQ(rows[0].lower, 2);
  EXPECT_EQ(rows[0].upper, 5);
  EXPECT_EQ(rows[0].size, 8);
  EXPECT_EQ(rows[1].id, "y");
}

TEST(LayoutCsv, HalfOpenRangesThatOnlyTouchDoNotOverlap) {
  auto rows = ParseLayoutCsv("id,lower,upper,size\na,0,10,5\nb,10,20,5\nc,5,15,1\n", "p.csv");
  auto in = CsvIntervals(rows);
  EXPECT_LT(in[0].end, in[1].start);  // [0,10) and [10,20) share no time
  EXPECT_LE(in[2].start, in[0].end);  // [5,15) meets both
  EXPECT_GE(in[2].end, in[1].start);
  EXPECT_EQ(SolveLayoutIlp(in, 1, {}).height, 6);
}

TEST(LayoutCsv, BadInputNamesFileLineAndColumn) {
  EXPECT_EQ(ErrorOf(""), "p.csv:1: empty file: expected the header id,lower,upper,size");
  EXPECT_EQ(ErrorOf("id,lower,size\n"), "p.csv:1: header lacks the column 'upper'");
  EXPECT_EQ(ErrorOf("id,lower,upper,size,colour\n"),
            "p.csv:1: unknown column 'colour' (expected id, lower, upper, size and optionally "
            "offset)");
  EXPECT_EQ(ErrorOf("id,lower,upper,size\na,0,4,big\n"),
            "p.csv:2: column 'size': expected a non-negative integer, found 'big'");
  EXPECT_EQ(ErrorOf("id,lower,upper,size\na,-1,4,2\n"),
            "p.csv:2: column 'lower': expected a non-negative integer, found '-1'");
  EXPECT_EQ(ErrorOf("id,lower,upper,size\na,4,4,2\n"),
            "p.csv:2: column 'upper': 4 must be greater than lower (4)");
  EXPECT_EQ(ErrorOf("id,lower,upper,size\na,0,4,2\n\na,1,5,2\n"),
            "p.csv:4: column 'id': 'a' repeats");
  EXPECT_EQ(ErrorOf("id,lower,upper,size\na,0,4\n"), "p.csv:2: expected 4 fields, found 3");
}

TEST(LayoutCsv, SolutionMatchesTheGoldenFile) {
  auto rows = LoadLayoutCsv(testing::DataPath("ilp/layout_small.csv"));
  auto in = CsvIntervals(rows);
  LayoutIlpResult r = SolveLayoutIlp(in, 1, {});
  ASSERT_EQ(CheckLayout(in, r.offsets, 1), "");
  EXPECT_EQ(r.status, ModelStatus::kOptimal);
  EXPECT_EQ(LayoutSolutionCsv(rows, r.offsets),
            ReadFile(testing::DataPath("ilp/layout_small.solution.csv")));
  // The solution is itself a valid problem file (the offset column is ignored).
  auto again = ParseLayoutCsv(LayoutSolutionCsv(rows, r.offsets), "solution.csv");
  ASSERT_EQ(again.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(again[i].id, rows[i].id);
    EXPECT_EQ(again[i].size, rows[i].size);
  }
}

}  // namespace
}  // namespace roam::ilp
