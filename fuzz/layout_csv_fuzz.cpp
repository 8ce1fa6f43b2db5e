// MiniMalloc CSV reader and the layouts on arbitrary bytes: the greedy layouts always, the layout
// ILP on problems small enough to solve in milliseconds.
#include <string>

#include "baseline/layouts.h"
#include "core/error.h"
#include "core/memory_model.h"
#include "fuzz/contract.h"
#include "ilp/layout_csv.h"
#include "ilp/layout_ilp.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  using namespace roam;
  std::vector<ilp::LayoutCsvRow> rows;
  try {
    rows = ilp::ParseLayoutCsv(fuzz::Text(data, size), "fuzz.csv");
  } catch (const InputError&) {
    return 0;
  }
  const std::vector<Interval> intervals = ilp::CsvIntervals(rows);
  const Bytes lower_bound = MaxLiveBytes(intervals);
  auto check = [&](const std::vector<Bytes>& offsets, const char* who) {
    const std::string problem = CheckLayout(intervals, offsets, 1);
    fuzz::Require(problem.empty(), who, problem);
    fuzz::Require(LayoutHeight(intervals, offsets) >= lower_bound, who, "below the lower bound");
    // The solution file reads back to the same rows.
    auto read = ilp::ParseLayoutCsv(ilp::LayoutSolutionCsv(rows, offsets), "solution.csv");
    fuzz::Require(read.size() == rows.size(), who, "solution round trip");
  };
  for (std::string_view layout : LayoutNames()) {
    std::vector<Bytes> offsets;
    try {
      offsets = PlaceBuffers(layout, intervals, 1);
    } catch (const InputError&) {
      continue;  // the pytorch simulation's segments would end beyond kMaxBytes: refused
    }
    check(offsets, "greedy");
  }
  if (intervals.size() <= 6) {
    ilp::LayoutIlpParams params;
    params.solve.time_limit_s = 0.5;
    const ilp::LayoutIlpResult r = ilp::SolveLayoutIlp(intervals, 1, params);
    check(r.offsets, "layout ILP");
    fuzz::Require(r.lower_bound <= r.height && r.lower_bound >= lower_bound, "layout ILP bound");
  }
  return 0;
}
