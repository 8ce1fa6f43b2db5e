// The files of a result set: summary.csv, summary.json, table.md, sweep charts, report.html.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "batch/batch.h"
#include "core/error.h"
#include "core/io.h"
#include "report/html.h"
#include "report/svg.h"

namespace roam::batch {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Param(const RunRecord& r, const std::string& axis) {
  for (const auto& [k, v] : r.spec.params)
    if (k == axis) return v;
  return {};
}

// A run's input and swept settings, leaving out the given axes.
std::string Label(const RunRecord& r, const std::set<std::string>& leave_out) {
  std::string label = fs::path(r.spec.input).stem().string();
  for (const auto& [k, v] : r.spec.params)
    if (leave_out.count(k) == 0) label += " " + k + "=" + v;
  return label;
}

std::string Percent(double ratio) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f%%", 100.0 * ratio);
  return text;
}

std::string Seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", s);
  return text;
}

// Bars of one sweep chart: a panel per input and other settings, a bar per method.
struct PanelTable {
  std::vector<std::string> panels, methods;
  std::map<std::pair<std::string, std::string>, std::vector<double>> values;
  void Set(const std::string& panel, const std::string& method, size_t at, size_t n, double v) {
    if (std::find(panels.begin(), panels.end(), panel) == panels.end()) panels.push_back(panel);
    if (std::find(methods.begin(), methods.end(), method) == methods.end())
      methods.push_back(method);
    auto [it, fresh] = values.try_emplace({panel, method}, std::vector<double>(n, kNaN));
    it->second[at] = v;
  }
  void Fill(report::BarChart& chart, size_t n) const {
    // The planned methods first, then the baselines and the bound, in that order.
    chart.methods = methods;
    auto rank = [](const std::string& m) {
      return m == "pytorch" ? 1 : m == "best heuristic" ? 2 : m == "certified bound" ? 3 : 0;
    };
    std::stable_sort(chart.methods.begin(), chart.methods.end(),
                     [&](const std::string& a, const std::string& b) { return rank(a) < rank(b); });
    for (const std::string& p : panels) {
      report::BarPanel panel{p, {}};
      for (const std::string& m : chart.methods) {
        auto it = values.find({p, m});
        panel.values.push_back(it == values.end() ? std::vector<double>(n, kNaN) : it->second);
      }
      chart.panels.push_back(std::move(panel));
    }
  }
};

// For every swept parameter with two or more values: total peak per method, and planning time,
// against it, as grouped bars in small multiples (one panel per input and other settings).
std::vector<std::pair<std::string, std::string>> SweepCharts(const ResultSet& set) {
  std::vector<std::pair<std::string, std::string>> charts;  // file stem, svg
  for (const std::string& axis : set.axes) {
    std::vector<std::string> categories;
    for (const RunRecord& r : set.runs)
      if (std::string v = Param(r, axis);
          std::find(categories.begin(), categories.end(), v) == categories.end())
        categories.push_back(v);
    if (categories.size() < 2) continue;
    const size_t n = categories.size();
    PanelTable memory, time;
    for (const RunRecord& r : set.runs) {
      if (!r.ok) continue;
      size_t at = static_cast<size_t>(
          std::find(categories.begin(), categories.end(), Param(r, axis)) - categories.begin());
      // The mode's own bar is named after it (the mode is the category when it is the swept
      // axis).
      std::string panel = Label(r, {axis, "mode"});
      std::string planned = axis == "mode" ? "planned" : r.result.method;
      memory.Set(panel, planned, at, n, static_cast<double>(r.result.total_peak));
      memory.Set(panel, "pytorch", at, n, static_cast<double>(r.pytorch.total_peak));
      memory.Set(panel, "best heuristic", at, n, static_cast<double>(r.heuristic.total_peak));
      memory.Set(panel, "certified bound", at, n,
                 static_cast<double>(r.persistent_bytes + r.lower_bound));
      time.Set(panel, planned, at, n, Median(r.seconds));
    }
    report::BarChart m{"total peak against " + axis, axis, "total peak", true, categories, {}, {}};
    memory.Fill(m, n);
    report::BarChart t{
        "planning time against " + axis, axis, "seconds (median)", false, categories, {}, {}};
    time.Fill(t, n);
    charts.emplace_back("sweep-" + axis + ".memory", report::BarChartSvg(m));
    charts.emplace_back("sweep-" + axis + ".time", report::BarChartSvg(t));
  }
  return charts;
}

report::Table ReportTable(const ResultSet& set) {
  report::Table t;
  t.header = {"run", "mode"};
  for (const std::string& a : set.axes)
    if (a != "mode") t.header.push_back(a);
  for (const char* h : {"status", "graph", "ops", "total peak", "pytorch", "best heuristic",
                        "certified bound", "saving vs pytorch", "seconds (median)", "outcome"})
    t.header.push_back(h);
  for (const RunRecord& r : set.runs) {
    std::vector<std::string> row = {r.spec.name, std::string(ToString(r.spec.mode))};
    for (const std::string& a : set.axes)
      if (a != "mode") row.push_back(Param(r, a));
    if (!r.ok) {
      row.push_back("failed");
      row.push_back(r.error);
      row.resize(t.header.size());
    } else {
      auto hb = [](Bytes b) { return report::HumanBytes(static_cast<double>(b)); };
      double saving = r.pytorch.total_peak > 0 ? 1.0 - static_cast<double>(r.result.total_peak) /
                                                           static_cast<double>(r.pytorch.total_peak)
                                               : 0.0;
      for (std::string cell :
           {std::string("ok"), r.graph, std::to_string(r.ops), hb(r.result.total_peak),
            hb(r.pytorch.total_peak), hb(r.heuristic.total_peak) + " (" + r.heuristic.method + ")",
            hb(r.persistent_bytes + r.lower_bound), Percent(saving), Seconds(Median(r.seconds)),
            r.outcome})
        row.push_back(std::move(cell));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The paper-style table (markdown): one row per input and non-mode setting, total peak of
// PyTorch, the best heuristic, each mode (with its median planning time), and the certified
// bound. Every cell carries its unit (MiB = 2^20 bytes, s), and the header says what it is.
std::string PaperTable(const ResultSet& set) {
  std::vector<std::string> modes, rows;
  std::map<std::string, std::map<std::string, std::string>> cells;
  auto mib = [](Bytes b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
    return std::string(text);
  };
  for (const RunRecord& r : set.runs) {
    std::string row = Label(r, {"mode"});
    std::string mode(ToString(r.spec.mode));
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
    if (std::find(modes.begin(), modes.end(), mode) == modes.end()) modes.push_back(mode);
    auto& c = cells[row];
    if (!r.ok) {
      c[mode] = "failed";
      continue;
    }
    c["@graph"] = r.graph + " (" + std::to_string(r.ops) + " ops)";
    c["@pytorch"] = mib(r.pytorch.total_peak);
    c["@heuristic"] = mib(r.heuristic.total_peak) + " (" + r.heuristic.method + ")";
    c["@bound"] = mib(r.persistent_bytes + r.lower_bound);
    c[mode] = mib(r.result.total_peak) + " (" + Seconds(Median(r.seconds)) + " s)";
  }
  std::string out =
      "Total peak (persistent + arena) in MiB (2^20 bytes); each mode's median planning time in "
      "seconds in parentheses.\n\n| run | graph | PyTorch total peak | best heuristic total peak |";
  for (const std::string& m : modes) out += " " + m + " total peak (time) |";
  out += " certified bound |\n|---|---|---|---|";
  for (size_t i = 0; i < modes.size(); ++i) out += "---|";
  out += "---|\n";
  for (const std::string& row : rows) {
    auto& c = cells[row];
    out +=
        "| " + row + " | " + c["@graph"] + " | " + c["@pytorch"] + " | " + c["@heuristic"] + " |";
    for (const std::string& m : modes) out += " " + c[m] + " |";
    out += " " + c["@bound"] + " |\n";
  }
  return out;
}

}  // namespace

ResultSet RunShard(std::vector<RunSpec> specs, ResultSet set, const RunnerParams& params,
                   const std::function<void(const Progress&)>& progress) {
  for (const RunSpec& s : specs) set.all_keys.push_back(s.key);
  std::vector<RunSpec> mine;
  for (RunSpec& s : specs)
    if (InShard(s.key, set.shard)) mine.push_back(std::move(s));
  std::error_code ec;
  fs::create_directories(params.out_dir, ec);
  if (ec || !fs::is_directory(params.out_dir))
    throw InputError(params.out_dir + ": cannot create the output directory");
  set.runs = RunAll(mine, params, progress);
  WriteResults(params.out_dir, set);
  return set;
}

ResultSet MergeDirectories(const std::vector<std::string>& dirs, const std::string& out_dir) {
  std::vector<ResultSet> sets;
  for (const std::string& dir : dirs)
    sets.push_back(ParseResults(ReadFile(dir + "/summary.json"), dir + "/summary.json"));
  ResultSet merged = MergeResults(sets, dirs);
  fs::create_directories(out_dir);
  // Per-run plans, records and pictures come along, so the merged report shows them.
  for (const std::string& dir : dirs)
    for (const char* sub : {"plans", "runs", "plots"}) {
      std::error_code ec;
      if (!fs::is_directory(dir + "/" + sub, ec)) continue;
      fs::create_directories(out_dir + "/" + sub);
      for (const auto& entry : fs::directory_iterator(dir + "/" + sub)) {
        std::string name = entry.path().filename().string();
        // Sweep charts are redrawn from the merged runs; dot files are temporaries a killed
        // run left behind.
        if (name.rfind("sweep-", 0) == 0 || name[0] == '.') continue;
        fs::copy_file(entry.path(), out_dir + "/" + sub + "/" + name,
                      fs::copy_options::overwrite_existing);
      }
    }
  WriteResults(out_dir, merged);
  return merged;
}

void WriteResults(const std::string& dir, const ResultSet& set) {
  fs::create_directories(dir);
  WriteFileAtomically(dir + "/summary.csv", ResultsToCsv(set));
  WriteFileAtomically(dir + "/summary.json", ResultsToJson(set));
  std::vector<report::Figure> figures;
  if (set.kind == "bench") {
    WriteFileAtomically(dir + "/table.md", PaperTable(set));
    fs::create_directories(dir + "/plots");
    for (auto& [stem, svg] : SweepCharts(set)) {
      WriteFileAtomically(dir + "/plots/" + stem + ".svg", svg);
      figures.push_back({stem, std::move(svg)});
    }
  }
  for (const RunRecord& r : set.runs) {
    if (!r.ok) continue;
    for (const char* what : {"layout", "memory"}) {
      std::string path = dir + "/plots/" + r.spec.name + "." + what + ".svg";
      std::error_code ec;
      if (fs::is_regular_file(path, ec))
        figures.push_back({r.spec.name + " " + what, ReadFile(path)});
    }
  }
  int failed = 0;
  for (const RunRecord& r : set.runs) failed += r.ok ? 0 : 1;
  std::vector<std::string> notes = {
      std::to_string(set.runs.size()) + " runs, " + std::to_string(failed) + " failed" +
      (set.shard.count > 1 ? ", shard " + ToString(set.shard) : std::string()) +
      ". Sizes are total peaks (persistent + arena); the certified bound is persistent bytes plus "
      "a lower bound on the theoretical peak of any order."};
  std::string title =
      set.title.empty() ? "roam " + set.kind : "roam " + set.kind + ": " + set.title;
  WriteFileAtomically(dir + "/report.html",
                      report::ReportHtml(title, notes, ReportTable(set), figures));
}

}  // namespace roam::batch
