// MiniMalloc CSV problems: parsing, errors naming file, line and column, and the solution
// format (golden file).
#include "layout/csv.h"

#include <gtest/gtest.h>

#include "core/bytes.h"
#include "core/error.h"
#include "core/io.h"
#include "ilp/layout_ilp.h"
#include "layout/layout.h"
#include "tests/support/test_data.h"

namespace roam::layout {
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
  auto rows = ParseLayoutCsv("size,id,upper,lower\r\n8,x,5,2\n\n4,y,3,0\n", "p.csv").rows;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].id, "x");
  EXPECT_EQ(rows[0].lower, 2);
  EXPECT_EQ(rows[0].upper, 5);
  EXPECT_EQ(rows[0].size, 8);
  EXPECT_EQ(rows[1].id, "y");
}

TEST(LayoutCsv, HalfOpenRangesThatOnlyTouchDoNotOverlap) {
  auto rows = ParseLayoutCsv("id,lower,upper,size\na,0,10,5\nb,10,20,5\nc,5,15,1\n", "p.csv").rows;
  auto in = CsvIntervals(rows);
  EXPECT_LT(in[0].end, in[1].start);  // [0,10) and [10,20) share no time
  EXPECT_LE(in[2].start, in[0].end);  // [5,15) meets both
  EXPECT_GE(in[2].end, in[1].start);
  EXPECT_EQ(ilp::SolveLayoutIlp(in, 1, {}).height, 6);
  EXPECT_EQ(SolveLayout(in, 1, {}).height, 6);
}

TEST(LayoutCsv, IntervalsKeepTheFilesDurationsWhenTheyFitAStep) {
  // The preorders rank buffers by how long they live: ranks would make the 1,000-unit buffer
  // a and the 10-unit buffer c look alike (each spans two of the four distinct times).
  auto rows =
      ParseLayoutCsv("id,lower,upper,size\na,100,1100,1\nb,1100,1110,1\nc,1110,1120,1\n", "p.csv")
          .rows;
  auto in = CsvIntervals(rows);
  EXPECT_EQ(in[0].start, 0);  // shifted so that the earliest lower is 0
  EXPECT_EQ(in[0].end - in[0].start + 1, 1000);
  EXPECT_EQ(in[2].end - in[2].start + 1, 10);
  EXPECT_LT(in[0].end, in[1].start);
  // Times wider than a step are compressed by rank, which keeps which pairs intersect.
  rows = ParseLayoutCsv(
             "id,lower,upper,size\na,0,5000000000,1\nb,4000000000,6000000000,1\n"
             "c,5000000000,7000000000,1\n",
             "p.csv")
             .rows;
  in = CsvIntervals(rows);
  EXPECT_EQ(in[0].start, 0);
  EXPECT_EQ(in[2].end, 3);  // one before the rank of its upper, the last of five times
  EXPECT_GE(in[0].end, in[1].start);
  EXPECT_LT(in[0].end, in[2].start);
  EXPECT_GE(in[1].end, in[2].start);
}

TEST(LayoutCsv, BadInputNamesFileLineAndColumn) {
  EXPECT_EQ(ErrorOf(""), "p.csv:1: empty file: expected the header id,lower,upper,size");
  EXPECT_EQ(ErrorOf("id,lower,size\n"), "p.csv:1: header lacks the column 'upper'");
  EXPECT_EQ(ErrorOf("id,lower,upper,size,colour\n"),
            "p.csv:1: unknown column 'colour' (expected id, lower, upper, size and optionally "
            "alignment, offset, hint)");
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
  auto rows = LoadLayoutCsv(testing::DataPath("ilp/layout_small.csv")).rows;
  auto in = CsvIntervals(rows);
  ilp::LayoutIlpResult r = ilp::SolveLayoutIlp(in, 1, {});
  ASSERT_EQ(CheckLayout(in, r.offsets, 1), "");
  EXPECT_EQ(r.status, ilp::ModelStatus::kOptimal);
  EXPECT_EQ(LayoutSolutionCsv(rows, r.offsets),
            ReadFile(testing::DataPath("ilp/layout_small.solution.csv")));
  // The solution is itself a valid problem file, with every offset fixed.
  auto again = ParseLayoutCsv(LayoutSolutionCsv(rows, r.offsets), "solution.csv").rows;
  ASSERT_EQ(again.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(again[i].id, rows[i].id);
    EXPECT_EQ(again[i].size, rows[i].size);
    EXPECT_EQ(again[i].offset, r.offsets[i]);
  }
}

// A solution file fixes every buffer, and its offsets may add up to more than roam's maximum
// while each buffer ends within it (the fuzzer's finding: two buffers of 2^49 bytes stacked).
// What is refused is buffers without an offset stacked above the highest fixed one beyond it.
TEST(LayoutCsv, FixedOffsetsAreBoundedByTheirTopNotTheirSum) {
  const std::string half = std::to_string(kMaxBytes / 2);
  const std::string text =
      "id,lower,upper,size,offset\na,0,2," + half + ",0\nb,0,2," + half + "," + half + "\n";
  EXPECT_EQ(ParseLayoutCsv(text, "solution.csv").rows.size(), 2u);
  const std::string loose =
      "id,lower,upper,size,offset\na,0,2," + half + "," + half + "\nb,0,2," + half + ",\n";
  EXPECT_NE(ErrorOf(loose).find("p.csv:3: column 'offset': the buffers without an offset"),
            std::string::npos)
      << ErrorOf(loose);
}

TEST(LayoutCsv, ReadsMiniMallocsOptionalColumnsAndSpellings) {
  auto p = ParseLayoutCsv(
      "buffer,start,end,size,alignment,offset,hint\n"
      "a,0,3,8,4,,4\n"
      "b,2,5,4,1,0,0\n",
      "p.csv");
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_TRUE(p.has_alignment && p.has_offset && p.has_hint);
  EXPECT_EQ(p.rows[0].id, "a");
  EXPECT_EQ(p.rows[0].upper, 4);  // "end" is inclusive
  EXPECT_EQ(p.rows[0].alignment, 4);
  EXPECT_EQ(p.rows[0].offset, -1);  // empty: free
  EXPECT_EQ(p.rows[0].hint, 4);
  EXPECT_EQ(p.rows[1].offset, 0);
  auto plain = ParseLayoutCsv("id,lower,upper,size\na,0,3,8\n", "p.csv");
  EXPECT_FALSE(plain.has_alignment || plain.has_offset || plain.has_hint);
  EXPECT_EQ(plain.rows[0].alignment, 1);
}

TEST(LayoutCsv, BadOptionalColumnsNameTheLineAndColumn) {
  EXPECT_EQ(ErrorOf("id,lower,upper,size,alignment\na,0,4,2,0\n"),
            "p.csv:2: column 'alignment': must be positive, found '0'");
  EXPECT_EQ(ErrorOf("id,lower,upper,size,alignment,offset\na,0,4,2,4,6\n"),
            "p.csv:2: column 'offset': 6 is not a multiple of the alignment 4");
  EXPECT_EQ(ErrorOf("id,lower,upper,size,hint\na,0,4,2,x\n"),
            "p.csv:2: column 'hint': expected a non-negative integer, found 'x'");
  EXPECT_EQ(ErrorOf("id,start,end,size\na,4,3,2\n"),
            "p.csv:2: column 'end': 3 must not be less than the start (4)");
  EXPECT_EQ(ErrorOf("id,lower,upper,size,upper\n"), "p.csv:1: column 'upper' appears twice");
}

TEST(LayoutCsv, SolutionHasAnAlignmentColumnOnlyWhenSomeBufferNeedsOne) {
  auto p = ParseLayoutCsv("id,lower,upper,size,alignment\na,0,3,8,1\nb,1,2,4,8\n", "p.csv");
  std::vector<Bytes> offsets = {0, 8};
  EXPECT_EQ(LayoutSolutionCsv(p.rows, offsets),
            "id,lower,upper,size,alignment,offset\na,0,3,8,1,0\nb,1,2,4,8,8\n");
  p.rows[1].alignment = 1;
  EXPECT_EQ(LayoutSolutionCsv(p.rows, offsets),
            "id,lower,upper,size,offset\na,0,3,8,0\nb,1,2,4,8\n");
}

}  // namespace
}  // namespace roam::layout
