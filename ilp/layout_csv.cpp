#include "ilp/layout_csv.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <set>
#include <sstream>

#include "core/bytes.h"
#include "core/error.h"
#include "core/io.h"

namespace roam::ilp {
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

std::vector<LayoutCsvRow> ParseLayoutCsv(std::string_view text, std::string_view source) {
  auto fail = [&](size_t line, const std::string& what) {
    std::ostringstream msg;
    msg << source << ":" << line << ": " << what;
    throw InputError(msg.str());
  };
  static constexpr std::array<std::string_view, 4> kRequired = {"id", "lower", "upper", "size"};
  std::array<int, 4> column = {-1, -1, -1, -1};
  size_t num_fields = 0;
  bool have_header = false;
  std::vector<LayoutCsvRow> rows;
  std::set<std::string, std::less<>> ids;
  size_t line_no = 0;
  ByteSum total;
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
        auto it = std::find(kRequired.begin(), kRequired.end(), fields[f]);
        if (it != kRequired.end()) {
          auto k = static_cast<size_t>(it - kRequired.begin());
          if (column[k] >= 0)
            fail(line_no, "column '" + std::string(fields[f]) + "' appears twice");
          column[k] = static_cast<int>(f);
        } else if (fields[f] != "offset") {
          fail(line_no, "unknown column '" + std::string(fields[f]) +
                            "' (expected id, lower, upper, size and optionally offset)");
        }
      }
      for (size_t k = 0; k < kRequired.size(); ++k)
        if (column[k] < 0)
          fail(line_no, "header lacks the column '" + std::string(kRequired[k]) + "'");
      continue;
    }
    if (fields.size() != num_fields)
      fail(line_no, "expected " + std::to_string(num_fields) + " fields, found " +
                        std::to_string(fields.size()));
    auto number = [&](size_t k) {
      std::string_view v = fields[static_cast<size_t>(column[k])];
      std::int64_t value = 0;
      auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
      if (v.empty() || ec != std::errc() || end != v.data() + v.size() || value < 0)
        fail(line_no, "column '" + std::string(kRequired[k]) +
                          "': expected a non-negative integer, found '" + std::string(v) + "'");
      return value;
    };
    LayoutCsvRow row;
    row.id = std::string(fields[static_cast<size_t>(column[0])]);
    if (row.id.empty()) fail(line_no, "column 'id': empty");
    row.lower = number(1);
    row.upper = number(2);
    row.size = number(3);
    if (row.size > kMaxBytes)
      fail(line_no, "column 'size': " + std::to_string(row.size) +
                        " is more than roam's maximum of " + DescribeMaxBytes());
    // The heights of layouts are bounded by the total, which must fit too.
    if (!total.Add(row.size))
      fail(line_no, "column 'size': the sizes up to this row total more than roam's maximum of " +
                        DescribeMaxBytes());
    if (row.upper <= row.lower)
      fail(line_no, "column 'upper': " + std::to_string(row.upper) +
                        " must be greater than lower (" + std::to_string(row.lower) + ")");
    if (!ids.insert(row.id).second) fail(line_no, "column 'id': '" + row.id + "' repeats");
    rows.push_back(std::move(row));
  }
  if (!have_header)
    fail(line_no == 0 ? 1 : line_no, "empty file: expected the header id,lower,upper,size");
  return rows;
}

std::vector<LayoutCsvRow> LoadLayoutCsv(const std::string& path) {
  return ParseLayoutCsv(ReadFile(path), path);
}

std::vector<Interval> CsvIntervals(std::span<const LayoutCsvRow> rows) {
  std::vector<std::int64_t> times;
  for (const LayoutCsvRow& r : rows) {
    times.push_back(r.lower);
    times.push_back(r.upper);
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  auto rank = [&](std::int64_t t) {
    return static_cast<Step>(std::lower_bound(times.begin(), times.end(), t) - times.begin());
  };
  std::vector<Interval> intervals;
  intervals.reserve(rows.size());
  for (const LayoutCsvRow& r : rows)
    intervals.push_back({r.size, rank(r.lower), rank(r.upper) - 1});
  return intervals;
}

std::string LayoutSolutionCsv(std::span<const LayoutCsvRow> rows, std::span<const Bytes> offsets) {
  std::ostringstream out;
  out << "id,lower,upper,size,offset\n";
  for (size_t i = 0; i < rows.size(); ++i)
    out << rows[i].id << ',' << rows[i].lower << ',' << rows[i].upper << ',' << rows[i].size << ','
        << offsets[i] << '\n';
  return out.str();
}

}  // namespace roam::ilp
