// MiniMalloc-style layout problems as CSV (docs/ilp.md), so `roam layout` reads and writes
// the files of existing allocation benchmarks.
//
// In: a header naming the columns id, lower, upper, size (any order; an offset column is
// accepted and ignored), then one buffer per line; a buffer is resident over the half-open
// time range [lower, upper). Out: the same rows with an offset column appended.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/memory_model.h"

namespace roam::ilp {

struct LayoutCsvRow {
  std::string id;
  std::int64_t lower = 0;
  std::int64_t upper = 0;  // exclusive
  std::int64_t size = 0;
};

// Throws InputError naming source, the line and the column; sizes and their total must be at
// most kMaxBytes (core/bytes.h).
std::vector<LayoutCsvRow> ParseLayoutCsv(std::string_view text, std::string_view source);
std::vector<LayoutCsvRow> LoadLayoutCsv(const std::string& path);

// The rows as intervals over dense steps (time values compressed by rank, which keeps
// exactly the pairs of rows whose ranges intersect).
std::vector<Interval> CsvIntervals(std::span<const LayoutCsvRow> rows);

// "id,lower,upper,size,offset" and one line per row, in input order.
std::string LayoutSolutionCsv(std::span<const LayoutCsvRow> rows, std::span<const Bytes> offsets);

}  // namespace roam::ilp
