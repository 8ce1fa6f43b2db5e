// summary.csv, summary.json (roam-results-v1) and merging shard outputs.
#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "batch/batch.h"
#include "core/error.h"
#include "core/io.h"

namespace roam::batch {
namespace {

using Json = nlohmann::ordered_json;
constexpr std::string_view kResultsFormat = "roam-results-v1";

std::string Fixed(double v, int digits) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f", digits, v);
  return text;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

double Ratio(Bytes saved, Bytes of) {
  return of > 0 ? static_cast<double>(saved) / static_cast<double>(of) : 0.0;
}

Json FiguresJson(const MethodFigures& f) {
  return Json{{"method", f.method},
              {"theoretical_peak", f.theoretical_peak},
              {"actual_peak", f.actual_peak},
              {"total_peak", f.total_peak}};
}

MethodFigures ParseFigures(const Json& j) {
  return {j.at("method").get<std::string>(), j.at("theoretical_peak").get<Bytes>(),
          j.at("actual_peak").get<Bytes>(), j.at("total_peak").get<Bytes>()};
}

Json RecordJson(const RunRecord& r) {
  Json params = Json::array(), figures = Json::array();
  for (const auto& [k, v] : r.spec.params) params.push_back(Json::array({k, v}));
  for (const auto& [k, v] : r.figures) figures.push_back(Json::array({k, v}));
  return Json{{"key", r.spec.key},
              {"name", r.spec.name},
              {"input", r.spec.input},
              {"overrides", r.spec.overrides},
              {"mode", std::string(ToString(r.spec.mode))},
              {"repeats", r.spec.repeats},
              {"params", params},
              {"ok", r.ok},
              {"exit_code", r.exit_code},
              {"error", r.error},
              {"graph", r.graph},
              {"ops", r.ops},
              {"storages", r.storages},
              {"persistent_bytes", r.persistent_bytes},
              {"result", FiguresJson(r.result)},
              {"fragmentation", r.fragmentation},
              {"pytorch", FiguresJson(r.pytorch)},
              {"heuristic", FiguresJson(r.heuristic)},
              {"lower_bound", r.lower_bound},
              {"seconds", r.seconds},
              {"baseline_seconds", r.baseline_seconds},
              {"outcome", r.outcome},
              {"figures", figures}};
}

RunRecord RecordFromJson(const Json& j) {
  RunRecord r;
  r.spec.key = j.at("key").get<std::string>();
  r.spec.name = j.at("name").get<std::string>();
  r.spec.input = j.at("input").get<std::string>();
  r.spec.overrides = j.at("overrides").get<std::vector<std::string>>();
  std::string mode = j.at("mode").get<std::string>();
  if (!ParseMode(mode)) throw std::runtime_error("unknown mode " + mode);
  r.spec.mode = *ParseMode(mode);
  r.spec.repeats = j.at("repeats").get<int>();
  for (const Json& p : j.at("params"))
    r.spec.params.emplace_back(p.at(0).get<std::string>(), p.at(1).get<std::string>());
  r.ok = j.at("ok").get<bool>();
  r.exit_code = j.at("exit_code").get<int>();
  r.error = j.at("error").get<std::string>();
  r.graph = j.at("graph").get<std::string>();
  r.ops = j.at("ops").get<int>();
  r.storages = j.at("storages").get<int>();
  r.persistent_bytes = j.at("persistent_bytes").get<Bytes>();
  r.result = ParseFigures(j.at("result"));
  r.fragmentation = j.at("fragmentation").get<double>();
  r.pytorch = ParseFigures(j.at("pytorch"));
  r.heuristic = ParseFigures(j.at("heuristic"));
  r.lower_bound = j.at("lower_bound").get<Bytes>();
  r.seconds = j.at("seconds").get<std::vector<double>>();
  r.baseline_seconds = j.at("baseline_seconds").get<double>();
  r.outcome = j.at("outcome").get<std::string>();
  for (const Json& f : j.at("figures"))
    r.figures.emplace_back(f.at(0).get<std::string>(), f.at(1).get<std::string>());
  return r;
}

template <typename F>
auto Parsing(std::string_view text, std::string_view source, F&& f) {
  CheckJsonNesting(text, source);
  try {
    return f();
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(std::string(source) + ": not a valid " + std::string(kResultsFormat) +
                     " file: " + e.what());
  }
}

}  // namespace

std::vector<std::string> FigureColumns(const std::vector<RunRecord>& runs) {
  std::vector<std::string> columns;
  for (const RunRecord& r : runs)
    for (const auto& [name, value] : r.figures)
      if (std::find(columns.begin(), columns.end(), name) == columns.end()) columns.push_back(name);
  return columns;
}

std::vector<std::string> CsvHeader(const std::vector<std::string>& axes,
                                   const std::vector<std::string>& figures) {
  std::vector<std::string> h = {"key", "name", "input", "set", "mode"};
  for (const std::string& axis : axes)
    if (axis != "mode") h.push_back(axis);  // already a column
  for (const char* c : {"status",
                        "exit_code",
                        "error",
                        "graph",
                        "ops",
                        "storages",
                        "persistent [B]",
                        "theoretical_peak [B]",
                        "actual_peak [B]",
                        "fragmentation [ratio]",
                        "total_peak [B]",
                        "lower_bound [B]",
                        "gap_to_bound [ratio]",
                        "pytorch_theoretical_peak [B]",
                        "pytorch_actual_peak [B]",
                        "pytorch_total_peak [B]",
                        "heuristic",
                        "heuristic_theoretical_peak [B]",
                        "heuristic_actual_peak [B]",
                        "heuristic_total_peak [B]",
                        "saving_vs_pytorch [ratio]",
                        "saving_vs_heuristic [ratio]",
                        "repeats",
                        "seconds_median [s]",
                        "seconds_min [s]",
                        "seconds_max [s]",
                        "baseline_seconds [s]",
                        "outcome"})
    h.push_back(c);
  h.insert(h.end(), figures.begin(), figures.end());
  return h;
}

std::vector<std::string> CsvRow(const RunRecord& r, const std::vector<std::string>& axes,
                                const std::vector<std::string>& figures) {
  std::vector<std::string> row = {r.spec.key, r.spec.name, r.spec.input,
                                  Join(r.spec.overrides, " "), std::string(ToString(r.spec.mode))};
  for (const std::string& axis : axes) {
    if (axis == "mode") continue;
    std::string value;
    for (const auto& [k, v] : r.spec.params)
      if (k == axis) value = v;
    row.push_back(value);
  }
  row.push_back(r.ok ? "ok" : "failed");
  row.push_back(std::to_string(r.exit_code));
  row.push_back(r.error);
  if (!r.ok) {
    row.resize(CsvHeader(axes, figures).size());
    return row;
  }
  const Bytes theo = r.result.theoretical_peak;
  auto b = [](Bytes v) { return std::to_string(v); };
  std::vector<double> s = r.seconds;
  std::sort(s.begin(), s.end());
  for (std::string cell :
       {r.graph,
        std::to_string(r.ops),
        std::to_string(r.storages),
        b(r.persistent_bytes),
        b(theo),
        b(r.result.actual_peak),
        Fixed(r.fragmentation, 6),
        b(r.result.total_peak),
        b(r.lower_bound),
        Fixed(Ratio(theo - r.lower_bound, theo), 6),
        b(r.pytorch.theoretical_peak),
        b(r.pytorch.actual_peak),
        b(r.pytorch.total_peak),
        r.heuristic.method,
        b(r.heuristic.theoretical_peak),
        b(r.heuristic.actual_peak),
        b(r.heuristic.total_peak),
        Fixed(Ratio(r.pytorch.total_peak - r.result.total_peak, r.pytorch.total_peak), 6),
        Fixed(Ratio(r.heuristic.total_peak - r.result.total_peak, r.heuristic.total_peak), 6),
        std::to_string(s.size()),
        Fixed(Median(s), 6),
        Fixed(s.empty() ? 0 : s.front(), 6),
        Fixed(s.empty() ? 0 : s.back(), 6),
        Fixed(r.baseline_seconds, 6),
        r.outcome})
    row.push_back(std::move(cell));
  for (const std::string& column : figures) {
    std::string value;
    for (const auto& [name, v] : r.figures)
      if (name == column) value = v;
    row.push_back(value);
  }
  return row;
}

std::string ResultsToCsv(const ResultSet& set) {
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    for (size_t i = 0; i < cells.size(); ++i) out << (i ? "," : "") << CsvField(cells[i]);
    out << "\n";
  };
  const std::vector<std::string> figures = FigureColumns(set.runs);
  line(CsvHeader(set.axes, figures));
  for (const RunRecord& r : set.runs) line(CsvRow(r, set.axes, figures));
  return out.str();
}

std::string RecordToJson(const RunRecord& r) { return RecordJson(r).dump(1) + "\n"; }

RunRecord ParseRecord(std::string_view text, std::string_view source) {
  return Parsing(text, source, [&] { return RecordFromJson(Json::parse(text)); });
}

std::string ResultsToJson(const ResultSet& set) {
  Json runs = Json::array();
  for (const RunRecord& r : set.runs) runs.push_back(RecordJson(r));
  Json j{{"format", std::string(kResultsFormat)},
         {"kind", set.kind},
         {"title", set.title},
         {"shard", ToString(set.shard)},
         {"axes", set.axes},
         {"all_keys", set.all_keys},
         {"runs", runs}};
  return j.dump(1) + "\n";
}

ResultSet ParseResults(std::string_view text, std::string_view source) {
  return Parsing(text, source, [&] {
    Json j = Json::parse(text);
    if (j.at("format").get<std::string>() != kResultsFormat)
      throw InputError(std::string(source) + ": format: expected " + std::string(kResultsFormat));
    ResultSet set;
    set.kind = j.at("kind").get<std::string>();
    set.title = j.at("title").get<std::string>();
    set.shard = ParseShard(j.at("shard").get<std::string>());
    set.axes = j.at("axes").get<std::vector<std::string>>();
    set.all_keys = j.at("all_keys").get<std::vector<std::string>>();
    for (const Json& r : j.at("runs")) set.runs.push_back(RecordFromJson(r));
    return set;
  });
}

ResultSet MergeResults(const std::vector<ResultSet>& sets,
                       const std::vector<std::string>& sources) {
  if (sets.empty()) throw InputError("merge-results: no result directories given");
  const ResultSet& first = sets.front();
  const int count = first.shard.count;
  std::vector<int> seen(static_cast<size_t>(count), -1);
  for (size_t i = 0; i < sets.size(); ++i) {
    const ResultSet& s = sets[i];
    if (s.kind != first.kind || s.axes != first.axes || s.all_keys != first.all_keys ||
        s.shard.count != count)
      throw InputError(sources[i] + ": not a shard of the same " + first.kind + " as " +
                       sources[0] + " (different runs or shard count)");
    int& at = seen[static_cast<size_t>(s.shard.index)];
    if (at >= 0)
      throw InputError("shard " + ToString(s.shard) +
                       " given twice: " + sources[static_cast<size_t>(at)] + " and " + sources[i]);
    at = static_cast<int>(i);
  }
  for (int k = 0; k < count; ++k)
    if (seen[static_cast<size_t>(k)] < 0)
      throw InputError("missing shard " + ToString(Shard{k, count}) + " of " +
                       std::to_string(count) + " (" + std::to_string(sets.size()) +
                       " result directories given)");
  std::map<std::string, const RunRecord*> by_key;
  for (size_t i = 0; i < sets.size(); ++i)
    for (const RunRecord& r : sets[i].runs)
      if (!by_key.emplace(r.spec.key, &r).second)
        throw InputError(sources[i] + ": run \"" + r.spec.key + "\" appears in two shards");
  ResultSet merged = first;
  merged.shard = Shard{};
  merged.runs.clear();
  std::vector<std::string> missing;
  for (const std::string& key : first.all_keys) {
    auto it = by_key.find(key);
    if (it == by_key.end()) {
      missing.push_back(key);
      continue;
    }
    merged.runs.push_back(*it->second);
    by_key.erase(it);
  }
  if (!missing.empty())
    throw InputError(std::to_string(missing.size()) + " run(s) missing from the shards, first \"" +
                     missing.front() + "\"");
  if (!by_key.empty())
    throw InputError("run \"" + by_key.begin()->first + "\" is in a shard but not in the " +
                     first.kind + "'s run list");
  return merged;
}

int ExitStatus(const std::vector<RunRecord>& runs) {
  bool internal = false, input = false;
  for (const RunRecord& r : runs) {
    if (r.ok) continue;
    (r.exit_code == 2 ? input : internal) = true;
  }
  return internal ? 1 : input ? 2 : 0;
}

}  // namespace roam::batch
