// roam layout: the layout ILP on a MiniMalloc-style CSV problem.
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "core/io.h"
#include "ilp/layout_csv.h"
#include "ilp/layout_ilp.h"

namespace roam::cli {
namespace {

struct LayoutOptions {
  std::string problem;
  std::string solution;  // -o
  Bytes capacity = 0;    // 0 = none
  double time_limit_s = 60.0;
  bool json = false;
};

int RunLayout(const LayoutOptions& options) {
  const auto rows = ilp::LoadLayoutCsv(options.problem);
  const auto intervals = ilp::CsvIntervals(rows);
  ilp::LayoutIlpParams params;
  params.solve.time_limit_s = options.time_limit_s;
  // With a capacity the question is "does it fit": stop at the first layout that does.
  if (options.capacity > 0) params.solve.stop_at_objective = static_cast<double>(options.capacity);
  // The CSV format has no alignment: every byte offset is allowed.
  const ilp::LayoutIlpResult r = ilp::SolveLayoutIlp(intervals, 1, params);
  const bool proven = r.height == r.lower_bound;
  const bool fits = options.capacity == 0 || r.height <= options.capacity;
  if (fits && !options.solution.empty())
    WriteFileAtomically(options.solution, ilp::LayoutSolutionCsv(rows, r.offsets));

  if (options.json) {
    nlohmann::ordered_json doc;
    doc["problem"] = options.problem;
    doc["buffers"] = rows.size();
    doc["height"] = r.height;
    doc["lower_bound"] = r.lower_bound;
    doc["proven_minimal"] = proven;
    doc["status"] = std::string(ilp::ToString(r.status));
    doc["gap"] = r.gap;
    doc["warm_start_height"] = r.warm_start_height;
    if (options.capacity > 0) {
      doc["capacity"] = options.capacity;
      doc["fits"] = fits;
    }
    doc["seconds"] = r.seconds;
    if (fits && !options.solution.empty()) doc["solution"] = options.solution;
    std::cout << doc.dump() << "\n";
  } else {
    std::ostringstream out;
    out << "problem           " << options.problem << " (" << rows.size() << " buffers)\n"
        << "height            " << r.height << " B\n"
        << "lower bound       " << r.lower_bound << " B\n"
        << "minimal           "
        << (proven ? "yes, proven"
                   : "not proven (" + std::string(ilp::ToString(r.status)) + ", gap " +
                         std::to_string(100.0 * r.gap) + "%)")
        << "\n"
        << "greedy height     " << r.warm_start_height << " B\n";
    if (options.capacity > 0)
      out << "capacity          " << options.capacity << " B: " << (fits ? "fits" : "does not fit")
          << "\n";
    out << "solving time      " << r.seconds << " s\n";
    if (fits && !options.solution.empty()) out << "solution written  " << options.solution << "\n";
    std::cout << out.str();
  }
  if (!fits) {
    std::cerr << "roam: no layout within the capacity of " << options.capacity
              << " B was found (best height " << r.height << " B, lower bound " << r.lower_bound
              << " B); nothing written\n";
    return kFailure;
  }
  return kOk;
}

}  // namespace

void AddLayoutCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<LayoutOptions>();
  CLI::App* cmd = app.add_subcommand(
      "layout",
      "Lay out buffers with fixed lifetimes (MiniMalloc CSV: id,lower,upper,size, half-open "
      "[lower, upper)) with the layout ILP; writes the rows with an offset column");
  cmd->add_option("problem", options->problem, "Problem CSV")->required()->check(CLI::ExistingFile);
  cmd->add_option("-o,--output", options->solution, "Write the solution CSV here")
      ->check(WritableOutputPath());
  cmd->add_option("--capacity", options->capacity,
                  "Memory capacity in bytes: succeed as soon as a layout fits (exit 1 if none "
                  "is found)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--time-limit", options->time_limit_s, "Seconds the solver may use")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print the result as one JSON object");
  cmd->callback([options, &action] { action = [options] { return RunLayout(*options); }; });
}

}  // namespace roam::cli
