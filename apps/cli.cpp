#include "apps/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "config/config.h"
#include "core/bytes.h"
#include "core/error.h"
#include "core/io.h"

namespace roam::cli {

void AddInputOptions(CLI::App& cmd, InputOptions& options) {
  cmd.add_option("input", options.path,
                 "Graph to plan: a roam-graph-v1 JSON file, or a YAML model config")
      ->required();
  cmd.add_option(
      "--set", options.overrides,
      "Override a config key, e.g. --set model.batch=4 (repeatable; for a graph file, planner.* "
      "and remat.* keys only)");
}

config::Input LoadInput(const InputOptions& options) {
  return config::LoadInput(options.path, options.overrides);
}

CLI::Option* AddAlignmentOption(CLI::App& cmd, Bytes& alignment) {
  return cmd
      .add_option("--alignment", alignment,
                  "Round sizes and offsets to a multiple of this many bytes (default: the "
                  "config's planner.alignment)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

namespace {

namespace fs = std::filesystem;

// The kinds of option CheckOutputs compares, by address (options live as long as the app).
std::set<const CLI::Option*>& Outputs() {
  static std::set<const CLI::Option*> outputs;
  return outputs;
}
std::set<const CLI::Option*>& Inputs() {
  static std::set<const CLI::Option*> inputs;
  return inputs;
}

// What a path names once links and relative spellings are resolved: the file itself when it
// exists, else its resolved directory and its name.
fs::path Resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec) return fs::absolute(path, ec).lexically_normal();
  return p;
}

bool SameFile(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (fs::equivalent(a, b, ec)) return true;  // hard links included
  return Resolved(a) == Resolved(b);
}

std::string OptionName(const CLI::Option* option) {
  if (option->get_positional()) return option->get_name();
  const auto& longs = option->get_lnames();
  return longs.empty() ? option->get_name() : "--" + longs.front();
}

}  // namespace

CLI::Validator WritableOutputPath() {
  // Checked before any planning starts, so a typo in -o does not cost a long solve.
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (path.empty()) return "the output path is empty";
        fs::path parent = fs::path(path).parent_path();
        if (parent.empty()) parent = ".";
        std::error_code ec;
        if (!fs::is_directory(parent, ec))
          return path + ": cannot write here: directory " + parent.string() + " does not exist";
        if (::access(parent.c_str(), W_OK) != 0)
          return path + ": cannot write here: directory " + parent.string() + " is not writable";
        const fs::file_status status = fs::status(path, ec);
        if (fs::is_directory(status)) return path + ": is a directory";
        if (fs::exists(status) && !fs::is_regular_file(status))
          return path +
                 ": is not a regular file (a device, fifo or socket); refusing to replace it";
        return {};
      },
      "PATH");
}

CLI::Validator OutputDirectoryPath() {
  return CLI::Validator(
      [](std::string& path) -> std::string {
        if (path.empty()) return "the output directory is empty";
        std::error_code ec;
        const fs::file_status status = fs::status(path, ec);
        if (fs::exists(status) && !fs::is_directory(status))
          return path + ": exists and is not a directory";
        return {};
      },
      "DIR");
}

CLI::Option* MarkOutput(CLI::Option* option) {
  Outputs().insert(option);
  return option;
}

CLI::Option* MarkInput(CLI::Option* option) {
  Inputs().insert(option);
  return option;
}

CLI::Option* AddOutputFile(CLI::App& cmd, const std::string& name, std::string& path,
                           const std::string& help) {
  return MarkOutput(cmd.add_option(name, path, help)->check(WritableOutputPath()));
}

std::string CheckOutputs(const CLI::App& cmd) {
  struct Named {
    const CLI::Option* option;
    std::string path;
  };
  std::vector<Named> inputs, outputs;
  for (const CLI::Option* option : cmd.get_options()) {
    const bool output = Outputs().count(option) > 0;
    if (!output && !option->get_positional() && Inputs().count(option) == 0) continue;
    for (const std::string& value : option->results()) {
      if (output && value.empty()) return OptionName(option) + ": the output path is empty";
      (output ? outputs : inputs).push_back({option, value});
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string& out = outputs[i].path;
    for (const Named& in : inputs)
      if (SameFile(in.path, out))
        return out + ": the output path is also the input " + in.path +
               "; refusing to overwrite an input, choose another output path";
    for (size_t j = 0; j < i; ++j)
      if (SameFile(outputs[j].path, out))
        return out + ": given to both " + OptionName(outputs[j].option) + " and " +
               OptionName(outputs[i].option) +
               "; one output would overwrite the other, choose different paths";
  }
  return {};
}

CLI::Validator FiniteNumber(double min, double max) {
  std::ostringstream range;
  range << "[" << min << ", " << max << "]";
  const std::string text_range = range.str();
  return CLI::Validator(
      [min, max, text_range](std::string& text) -> std::string {
        const char* begin = text.c_str();
        char* end = nullptr;
        errno = 0;
        const double value = std::strtod(begin, &end);
        if (text.empty() || end != begin + text.size())
          return "expected a number, got '" + text + "'";
        if (!std::isfinite(value) || errno == ERANGE)
          return "expected a finite number in " + text_range + ", got '" + text + "'";
        if (value < min || value > max)
          return "expected a number in " + text_range + ", got '" + text + "'";
        return {};
      },
      "NUMBER");
}

CLI::Validator ThreadCount() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        long long value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0 ||
            value > kMaxThreads)
          return "expected a count in [0, " + std::to_string(kMaxThreads) + "], got '" + text + "'";
        return {};
      },
      "COUNT");
}

void AddPlanOutputOptions(CLI::App& cmd, PlanOutputOptions& options) {
  AddOutputFile(cmd, "-o,--output", options.plan_path, "Write the plan (roam-plan-v1 JSON) here");
  cmd.add_flag("--json", options.json, "Print the summary as one JSON object");
}

std::string FormatBytes(Bytes bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 4) {
    value /= 1024.0;
    ++unit;
  }
  char text[64];
  if (unit == 0)
    std::snprintf(text, sizeof text, "%lld B", static_cast<long long>(bytes));
  else
    std::snprintf(text, sizeof text, "%.2f %s (%lld B)", value, kUnits[unit],
                  static_cast<long long>(bytes));
  return text;
}

int EmitPlan(const Graph& graph, const Plan& plan, const PlanOutputOptions& options,
             const std::vector<SummaryExtra>& extra) {
  if (std::string problem = ValidatePlan(graph, plan); !problem.empty()) {
    std::cerr << "roam: internal error: the plan for " << graph.name
              << " failed validation, nothing written: " << problem << "\n";
    return kFailure;
  }
  if (!options.plan_path.empty()) WriteFileAtomically(options.plan_path, PlanToJson(graph, plan));
  const PlanSummary& s = plan.summary;
  if (options.json) {
    auto doc = nlohmann::ordered_json::parse(SummaryToJson(s));
    doc["graph"] = plan.graph;
    for (const SummaryExtra& e : extra) doc[e.key] = nlohmann::ordered_json::parse(e.json_value);
    std::cout << doc.dump() << "\n";
    return kOk;
  }
  std::ostringstream out;
  char frag[32];
  std::snprintf(frag, sizeof frag, "%.2f%%", 100.0 * s.fragmentation);
  out << "graph             " << plan.graph << " (" << s.ops << " ops, " << s.storages
      << " planned storages)\n";
  for (const SummaryExtra& e : extra) {
    out << e.key << std::string(e.key.size() < 18 ? 18 - e.key.size() : 1, ' ') << e.text << "\n";
  }
  out << "persistent        " << FormatBytes(s.persistent_bytes) << "\n"
      << "theoretical peak  " << FormatBytes(s.theoretical_peak) << "\n"
      << "actual peak       " << FormatBytes(s.actual_peak) << "\n"
      << "fragmentation     " << frag << "\n"
      << "total peak        " << FormatBytes(s.total_peak) << "\n"
      << "planning time     " << s.seconds << " s\n";
  if (!options.plan_path.empty()) out << "plan written to   " << options.plan_path << "\n";
  std::cout << out.str();
  return kOk;
}

}  // namespace roam::cli
