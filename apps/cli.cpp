#include "apps/cli.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "core/io.h"
#include "gen/config.h"
#include "gen/generate.h"

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

Input LoadInput(const InputOptions& options) {
  const std::string& path = options.path;
  auto ends_with = [&](std::string_view suffix) {
    return path.size() >= suffix.size() &&
           path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends_with(".yaml") || ends_with(".yml")) {
    gen::Config config = gen::LoadConfig(path, options.overrides);
    return {gen::GenerateGraph(config), config.planner, config.remat};
  }
  gen::PlanningSettings settings = gen::ParsePlanningOverrides(options.overrides, path);
  return {LoadGraph(path), std::move(settings.planner), std::move(settings.remat)};
}

CLI::Option* AddAlignmentOption(CLI::App& cmd, Bytes& alignment) {
  return cmd
      .add_option("--alignment", alignment,
                  "Round sizes and offsets to a multiple of this many bytes (default: the "
                  "config's planner.alignment)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
}

CLI::Validator WritableOutputPath() {
  // Checked before any planning starts, so a typo in -o does not cost a long solve.
  return CLI::Validator(
      [](std::string& path) -> std::string {
        namespace fs = std::filesystem;
        fs::path parent = fs::path(path).parent_path();
        if (parent.empty()) parent = ".";
        std::error_code ec;
        if (!fs::is_directory(parent, ec))
          return path + ": cannot write here: directory " + parent.string() + " does not exist";
        if (::access(parent.c_str(), W_OK) != 0)
          return path + ": cannot write here: directory " + parent.string() + " is not writable";
        if (fs::is_directory(path, ec)) return path + ": is a directory";
        return {};
      },
      "PATH");
}

std::string OutputThatIsAnInput(const CLI::App& cmd) {
  const CLI::Option* output = cmd.get_option_no_throw("--output");
  if (output == nullptr || output->count() == 0) return {};
  const std::string out = output->as<std::string>();
  for (const CLI::Option* option : cmd.get_options()) {
    if (!option->get_positional() || option == output) continue;
    for (const std::string& in : option->results()) {
      std::error_code ec;
      if (std::filesystem::equivalent(in, out, ec))
        return out + ": the output path is also the input " + in +
               "; refusing to overwrite an input, choose another output path";
    }
  }
  return {};
}

void AddPlanOutputOptions(CLI::App& cmd, PlanOutputOptions& options) {
  cmd.add_option("-o,--output", options.plan_path, "Write the plan (roam-plan-v1 JSON) here")
      ->check(WritableOutputPath());
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
