// MiniMalloc's CSV layout problems (docs/layout.md), so `roam layout` reads and writes the files
// of existing allocation benchmarks.
//
// In: a header naming the columns, then one buffer per line. Required: id, lower, upper, size,
// in any order; MiniMalloc's spellings buffer / buffer_id (for id), start / begin (for lower)
// and end (an inclusive upper, so end + 1 is used) are accepted too. A buffer is resident over
// the half-open time range [lower, upper). Optional: alignment (the buffer's offset must be a
// multiple of it; 1 when absent), offset (a position fixed in advance; an empty field leaves
// the buffer free) and hint (a suggested offset: when every row has one and together they form
// a valid layout, it is the search's warm start). Out: id,lower,upper,size, then alignment when
// some buffer's is not 1, then offset, one row per buffer in input order (MiniMalloc's form).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory_model.h"

namespace roam::layout {

struct CsvRow {
  std::string id;
  std::int64_t lower = 0;
  std::int64_t upper = 0;  // exclusive
  std::int64_t size = 0;
  std::int64_t alignment = 1;
  std::int64_t offset = -1;  // fixed position, -1 when free
  std::int64_t hint = -1;    // suggested position, -1 when none
};

struct CsvProblem {
  std::vector<CsvRow> rows;
  bool has_alignment = false;  // the file had an alignment column
  bool has_offset = false;
  bool has_hint = false;
};

// Throws InputError naming source, the line and the column.
CsvProblem ParseLayoutCsv(std::string_view text, std::string_view source);
CsvProblem LoadLayoutCsv(const std::string& path);

// The rows as intervals: in the file's time units shifted to start at 0 when they fit a Step
// (durations then stay what the file says), otherwise over dense steps (time values compressed
// by rank). Either keeps exactly the pairs of rows whose ranges intersect.
std::vector<Interval> CsvIntervals(std::span<const CsvRow> rows);

// MiniMalloc's output: "id,lower,upper,size[,alignment],offset" and one line per row, in
// input order; the alignment column appears when some row's alignment is not 1.
std::string LayoutSolutionCsv(std::span<const CsvRow> rows, std::span<const Bytes> offsets);

}  // namespace roam::layout
