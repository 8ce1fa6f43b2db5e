// Shared plumbing of the roam command line: exit codes, input loading, and the one path
// every plan takes before it is written (validate, then print, then write atomically).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/graph.h"
#include "core/plan.h"

namespace roam::cli {

enum ExitCode : int { kOk = 0, kFailure = 1, kBadInput = 2 };

// A subcommand registers itself and leaves the work to run after parsing here.
using Action = std::function<int()>;

void AddEvaluateCommand(CLI::App& app, Action& action);
void AddValidateCommand(CLI::App& app, Action& action);
void AddExportGraphCommand(CLI::App& app, Action& action);
void AddConfigCommand(CLI::App& app, Action& action);
void AddPartitionCommand(CLI::App& app, Action& action);
void AddLayoutCommand(CLI::App& app, Action& action);
void AddOptimizeCommand(CLI::App& app, Action& action);
void AddRematCommand(CLI::App& app, Action& action);
void AddImportNodeLinkCommand(CLI::App& app, Action& action);
void AddBatchCommand(CLI::App& app, Action& action);
void AddBenchCommand(CLI::App& app, Action& action);
void AddMergeResultsCommand(CLI::App& app, Action& action);
void AddPlotCommand(CLI::App& app, Action& action);

// Options shared by every command that reads a graph: the input may be a roam-graph-v1 JSON
// file or a YAML model config, with --set overrides for configs.
struct InputOptions {
  std::string path;
  std::vector<std::string> overrides;  // "model.batch=4"
};
void AddInputOptions(CLI::App& cmd, InputOptions& options);

// What a command plans: the graph, and the settings that came with it (a config's planner and
// remat sections, after --set; the defaults for a graph file). config/config.h.
using Input = config::Input;
Input LoadInput(const InputOptions& options);

// A planner setting given as a flag wins over the input's planner section (or its default), so
// that a config's settings apply unless the command line says otherwise.
template <typename T>
T FlagOr(const CLI::Option* flag, const T& flag_value, const T& from_input) {
  return flag != nullptr && flag->count() > 0 ? flag_value : from_input;
}

// --alignment, defaulting to the input's planner.alignment (see FlagOr).
CLI::Option* AddAlignmentOption(CLI::App& cmd, Bytes& alignment);

// Output options shared by every command that produces a plan.
struct PlanOutputOptions {
  std::string plan_path;  // -o; empty = do not write
  bool json = false;      // print the summary as one JSON object
};
void AddPlanOutputOptions(CLI::App& cmd, PlanOutputOptions& options);

// Output and input options. Every option that names a file the command writes is registered
// with AddOutputFile (or MarkOutput), every file it reads besides its positional arguments with
// MarkInput; CheckOutputs then compares them all once parsing is done.
//
// At parse time an output file must be a non-empty path in an existing, writable directory,
// and either not exist yet or be a regular file (a directory, device, fifo or socket is
// refused: the rename that writes it would replace it).
CLI::Validator WritableOutputPath();
// The same for an output directory: non-empty, and a directory if it exists.
CLI::Validator OutputDirectoryPath();
CLI::Option* MarkOutput(CLI::Option* option);
CLI::Option* MarkInput(CLI::Option* option);
CLI::Option* AddOutputFile(CLI::App& cmd, const std::string& name, std::string& path,
                           const std::string& help);

// A message when one of the command's outputs names the same file as one of its inputs or as
// another of its outputs (compared after resolving links and relative spellings, for files that
// do not exist yet through their directory), else empty. Checked after parsing, before any
// work, so an input is never replaced and one output never overwrites another.
std::string CheckOutputs(const CLI::App& cmd);

// The one parser of floating-point flags: a finite number in [min, max]; NaN, infinities and
// anything that is not entirely a number are refused naming the flag.
CLI::Validator FiniteNumber(double min, double max);
// The longest time limit a flag may give (1e8 s, over three years: "no limit" in practice).
inline constexpr double kMaxSeconds = 1e8;
// A thread or job count: an integer in [0, kMaxThreads].
CLI::Validator ThreadCount();

// Validates the plan with the project's validator; an invalid plan is an internal failure
// (exit 1) and nothing is written. Otherwise prints the summary (with extra lines of
// human-readable context in text mode, or extra JSON members in --json mode) and writes the
// plan atomically when asked.
struct SummaryExtra {
  std::string key;
  std::string text;        // shown in text mode
  std::string json_value;  // already-encoded JSON value for --json mode
};
int EmitPlan(const Graph& graph, const Plan& plan, const PlanOutputOptions& options,
             const std::vector<SummaryExtra>& extra = {});

std::string FormatBytes(Bytes bytes);

}  // namespace roam::cli
