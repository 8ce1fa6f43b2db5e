// MiniMalloc CSV reader and the layouts on arbitrary bytes: the greedy layouts always, the layout
// search and the layout ILP on problems small enough to solve in milliseconds.
#include <string>

#include "baseline/layouts.h"
#include "core/error.h"
#include "core/memory_model.h"
#include "fuzz/contract.h"
#include "ilp/layout_ilp.h"
#include "layout/csv.h"
#include "layout/layout.h"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, size_t size) {
  using namespace roam;
  std::vector<layout::CsvRow> rows;
  try {
    rows = layout::ParseLayoutCsv(fuzz::Text(data, size), "fuzz.csv").rows;
  } catch (const InputError&) {
    return 0;
  }
  const std::vector<Interval> intervals = layout::CsvIntervals(rows);
  const Bytes lower_bound = MaxLiveBytes(intervals);
  auto check = [&](const std::vector<Bytes>& offsets, const char* who) {
    const std::string problem = CheckLayout(intervals, offsets, 1);
    fuzz::Require(problem.empty(), who, problem);
    fuzz::Require(LayoutHeight(intervals, offsets) >= lower_bound, who, "below the lower bound");
    // The solution file reads back to the same rows.
    auto read =
        layout::ParseLayoutCsv(layout::LayoutSolutionCsv(rows, offsets), "solution.csv").rows;
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
  if (intervals.size() <= 40) {
    layout::LayoutParams params;
    params.time_limit_s = 0.2;
    const layout::LayoutResult r = layout::SolveLayout(intervals, 1, params);
    check(r.offsets, "layout search");
    fuzz::Require(r.lower_bound <= r.height && r.lower_bound >= lower_bound, "search bound");
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
