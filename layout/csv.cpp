#include "layout/csv.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <limits>
#include <set>
#include <sstream>

#include "core/bytes.h"
#include "core/error.h"
#include "core/io.h"

namespace roam::layout {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t begin = 0;
  while (true) {
    size_t comma = line.find(',', begin);
    fields.push_back(
        Trim(line.substr(begin, comma == std::string_view::npos ? comma : comma - begin)));
    if (comma == std::string_view::npos) return fields;
    begin = comma + 1;
  }
}

}  // namespace

CsvProblem ParseLayoutCsv(std::string_view text, std::string_view source) {
  auto fail = [&](size_t line, const std::string& what) {
    std::ostringstream msg;
    msg << source << ":" << line << ": " << what;
    throw InputError(msg.str());
  };
  enum Column : size_t { kId, kLower, kUpper, kSize, kAlignment, kOffset, kHint, kColumns };
  static constexpr std::array<std::string_view, kColumns> kNames = {
      "id", "lower", "upper", "size", "alignment", "offset", "hint"};
  // MiniMalloc's other spellings; "end" is inclusive.
  static constexpr std::array<std::pair<std::string_view, Column>, 5> kAliases = {
      {{"buffer", kId}, {"buffer_id", kId}, {"start", kLower}, {"begin", kLower}, {"end", kUpper}}};
  std::array<int, kColumns> column;
  column.fill(-1);
  std::array<std::string, kColumns> header_name;
  bool inclusive_end = false;
  size_t num_fields = 0;
  bool have_header = false;
  CsvProblem problem;
  std::set<std::string, std::less<>> ids;
  size_t line_no = 0;
  ByteSum total, movable;
  Bytes fixed_top = 0;  // the highest end of a buffer at a fixed offset
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string_view line = text.substr(pos, eol == std::string_view::npos ? eol : eol - pos);
    pos = eol == std::string_view::npos ? text.size() : eol + 1;
    ++line_no;
    if (Trim(line).empty()) continue;
    std::vector<std::string_view> fields = SplitFields(line);
    if (!have_header) {
      have_header = true;
      num_fields = fields.size();
      for (size_t f = 0; f < fields.size(); ++f) {
        int k = -1;
        if (auto it = std::find(kNames.begin(), kNames.end(), fields[f]); it != kNames.end())
          k = static_cast<int>(it - kNames.begin());
        for (auto [alias, c] : kAliases)
          if (fields[f] == alias) k = static_cast<int>(c);
        if (k < 0)
          fail(line_no, "unknown column '" + std::string(fields[f]) +
                            "' (expected id, lower, upper, size and optionally alignment, "
                            "offset, hint)");
        if (column[static_cast<size_t>(k)] >= 0)
          fail(line_no, "column '" + std::string(fields[f]) + "' appears twice");
        column[static_cast<size_t>(k)] = static_cast<int>(f);
        header_name[static_cast<size_t>(k)] = std::string(fields[f]);
        if (fields[f] == "end") inclusive_end = true;
      }
      for (size_t k = 0; k < kSize + 1; ++k)
        if (column[k] < 0)
          fail(line_no, "header lacks the column '" + std::string(kNames[k]) + "'");
      problem.has_alignment = column[kAlignment] >= 0;
      problem.has_offset = column[kOffset] >= 0;
      problem.has_hint = column[kHint] >= 0;
      continue;
    }
    if (fields.size() != num_fields)
      fail(line_no, "expected " + std::to_string(num_fields) + " fields, found " +
                        std::to_string(fields.size()));
    // An empty optional field (offset, hint) means none. Every number is at most `max`
    // (roam's byte maximum for sizes, offsets and times), so no arithmetic on it overflows.
    auto number = [&](size_t k, bool optional, std::int64_t max = kMaxBytes) -> std::int64_t {
      std::string_view v = fields[static_cast<size_t>(column[k])];
      if (optional && v.empty()) return -1;
      std::int64_t value = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (ec == std::errc::result_out_of_range && end == v.data() + v.size() && v[0] != '-')
        fail(line_no, "column '" + header_name[k] + "': " + std::string(v) +
                          " is more than roam's maximum of " +
                          (max == kMaxBytes ? DescribeMaxBytes() : std::to_string(max)));
      if (v.empty() || ec != std::errc() || end != v.data() + v.size() || value < 0)
        fail(line_no, "column '" + header_name[k] + "': expected a non-negative integer, found '" +
                          std::string(v) + "'");
      if (value > max)
        fail(line_no, "column '" + header_name[k] + "': " + std::to_string(value) +
                          " is more than roam's maximum of " +
                          (max == kMaxBytes ? DescribeMaxBytes() : std::to_string(max)));
      return value;
    };
    CsvRow row;
    row.id = std::string(fields[static_cast<size_t>(column[kId])]);
    if (row.id.empty()) fail(line_no, "column '" + header_name[kId] + "': empty");
    row.lower = number(kLower, false);
    row.upper = number(kUpper, false);
    row.size = number(kSize, false);
    if (column[kAlignment] >= 0) {
      row.alignment = number(kAlignment, false, kMaxAlignment);
      if (row.alignment == 0) fail(line_no, "column 'alignment': must be positive, found '0'");
    }
    // A layout's height is at most the sum of each buffer's size plus its alignment's padding
    // (plus the fixed offsets, below), which must fit too.
    const Bytes reach = row.size + row.alignment - 1;  // both operands bounded: no overflow
    if (!total.Add(reach))
      fail(line_no, "column 'size': the sizes up to this row total more than roam's maximum of " +
                        DescribeMaxBytes());
    if (inclusive_end) {
      if (row.upper < row.lower)
        fail(line_no, "column 'end': " + std::to_string(row.upper) +
                          " must not be less than the start (" + std::to_string(row.lower) + ")");
      ++row.upper;
    } else if (row.upper <= row.lower) {
      fail(line_no, "column 'upper': " + std::to_string(row.upper) +
                        " must be greater than lower (" + std::to_string(row.lower) + ")");
    }
    if (column[kOffset] >= 0) row.offset = number(kOffset, true);
    if (column[kHint] >= 0) row.hint = number(kHint, true);
    if (row.offset >= 0 && row.offset % row.alignment != 0)
      fail(line_no, "column 'offset': " + std::to_string(row.offset) +
                        " is not a multiple of the alignment " + std::to_string(row.alignment));
    // A buffer placed at its offset (or hint) must end within the maximum as well, and the
    // buffers stacked above a fixed one too.
    for (auto [k, at] : {std::pair{kOffset, row.offset}, std::pair{kHint, row.hint}})
      if (at >= 0 && !AddBytes(at, reach))
        fail(line_no, "column '" + header_name[k] + "': " + std::to_string(at) + " plus the size " +
                          std::to_string(row.size) + " ends beyond roam's maximum of " +
                          DescribeMaxBytes());
    // Buffers without an offset may be stacked above the highest fixed one: not beyond the
    // maximum either. (Not the sum of the offsets: a solution file, every buffer fixed, must
    // read back whatever its offsets add up to.)
    if (row.offset >= 0)
      fixed_top = std::max(fixed_top, row.offset + reach);
    else
      movable.Add(reach);
    if (!AddBytes(fixed_top, movable.total()) || movable.overflowed())
      fail(line_no, "column '" + header_name[kOffset] +
                        "': the buffers without an offset up to this row, stacked above the "
                        "highest fixed one, would end beyond roam's maximum of " +
                        DescribeMaxBytes());
    if (!ids.insert(row.id).second)
      fail(line_no, "column '" + header_name[kId] + "': '" + row.id + "' repeats");
    problem.rows.push_back(std::move(row));
  }
  if (!have_header)
    fail(line_no == 0 ? 1 : line_no, "empty file: expected the header id,lower,upper,size");
  return problem;
}

CsvProblem LoadLayoutCsv(const std::string& path) { return ParseLayoutCsv(ReadFile(path), path); }

std::vector<Interval> CsvIntervals(std::span<const CsvRow> rows) {
  std::vector<Interval> intervals;
  intervals.reserve(rows.size());
  if (rows.empty()) return intervals;
  // The file's own time units, shifted to start at 0, when they fit a step: the search's
  // preorders rank buffers by how long they live (SearchParams::minimalloc_preorders), which
  // ranks would distort.
  std::int64_t first = rows.front().lower, last = rows.front().upper;
  for (const CsvRow& r : rows) {
    first = std::min(first, r.lower);
    last = std::max(last, r.upper);
  }
  if (last - first < std::numeric_limits<Step>::max()) {
    for (const CsvRow& r : rows)
      intervals.push_back(
          {r.size, static_cast<Step>(r.lower - first), static_cast<Step>(r.upper - 1 - first)});
    return intervals;
  }
  std::vector<std::int64_t> times;
  for (const CsvRow& r : rows) {
    times.push_back(r.lower);
    times.push_back(r.upper);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto rank = [&](std::int64_t t) {
    return static_cast<Step>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  };
  for (const CsvRow& r : rows) intervals.push_back({r.size, rank(r.lower), rank(r.upper) - 1});
  return intervals;
}

std::string LayoutSolutionCsv(std::span<const CsvRow> rows, std::span<const Bytes> offsets) {
  const bool alignment =
      std::any_of(rows.begin(), rows.end(), [](const CsvRow& r) { return r.alignment != 1; });
  std::ostringstream out;
  out << "id,lower,upper,size" << (alignment ? ",alignment" : "") << ",offset\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    out << rows[i].id << ',' << rows[i].lower << ',' << rows[i].upper << ',' << rows[i].size;
    if (alignment) out << ',' << rows[i].alignment;
    out << ',' << offsets[i] << '\n';
  }
  return out.str();
}

}  // namespace roam::layout
