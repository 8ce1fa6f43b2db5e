// roam layout: a MiniMalloc CSV problem solved by the layout search (default) or the layout ILP.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "core/bytes.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/io.h"
#include "ilp/layout_ilp.h"
#include "layout/csv.h"
#include "layout/layout.h"
#include "layout/repack.h"

namespace roam::cli {
namespace {

struct LayoutOptions {
  std::string problem;
  std::string solution;  // -o
  Bytes capacity = 0;    // 0 = none
  double time_limit_s = 60.0;
  std::string engine = "search";
  std::string order = "minimalloc";
  int repack = 0;  // subproblems of layout::Repack after the search; 0 = none
  bool json = false;
};

// What either engine answers, in the command's terms.
struct Answer {
  std::vector<Bytes> offsets;
  Bytes height = 0;
  Bytes lower_bound = 0;
  Bytes warm_start_height = 0;
  std::string status;
  double seconds = 0.0;
  std::int64_t nodes = -1;  // search only
  int partitions = -1;      // search only
};

Answer SolveWithSearch(const layout::CsvProblem& problem, std::span<const Interval> intervals,
                       const LayoutOptions& options) {
  if (options.repack > 0)
    for (const layout::CsvRow& row : problem.rows)
      if (row.alignment != 1 || row.offset >= 0)
        throw InputError(options.problem +
                         ": --repack does not support the alignment and offset columns");
  layout::LayoutParams params;
  params.time_limit_s = options.time_limit_s;
  if (options.capacity > 0) params.capacity = options.capacity;
  // A CSV's times are the program's own (CsvIntervals keeps them), which MiniMalloc's
  // preorders rank by; the library's defaults are tuned for training graphs' op positions.
  const bool minimalloc = options.order == "minimalloc";
  params.search.minimalloc_preorders = minimalloc;
  params.search.portfolio_first = minimalloc;
  std::vector<Bytes> hints;
  for (const layout::CsvRow& row : problem.rows) {
    params.buffer_alignments.push_back(row.alignment);
    params.fixed_offsets.push_back(row.offset);
    hints.push_back(row.offset >= 0 ? row.offset : row.hint);
  }
  const auto started = std::chrono::steady_clock::now();
  layout::LayoutResult r;
  try {
    // Hints are a warm start when they form a valid layout; otherwise they are only advice.
    bool use_hints =
        problem.has_hint && std::all_of(hints.begin(), hints.end(), [](Bytes h) { return h >= 0; });
    try {
      r = use_hints ? layout::SolveLayout(intervals, 1, params, std::span<const Bytes>(hints))
                    : layout::SolveLayout(intervals, 1, params);
    } catch (const std::invalid_argument& e) {
      if (!use_hints || std::string(e.what()).find("warm start") == std::string::npos) throw;
      std::cerr << "roam: " << options.problem << ": the hints are not a valid layout (" << e.what()
                << "); ignoring them\n";
      r = layout::SolveLayout(intervals, 1, params);
    }
  } catch (const std::invalid_argument& e) {
    throw InputError(options.problem + ": " + e.what());
  }
  // Repacking lowers the search's layout window by window towards the capacity (without one,
  // towards the proven lower bound).
  const Bytes goal = options.capacity > 0 ? options.capacity : r.lower_bound;
  if (options.repack > 0 && r.call == layout::LayoutCall::kOk && r.height > goal) {
    layout::RepackParams repack;
    repack.max_subproblems = options.repack;
    const Deadline deadline(options.time_limit_s);
    const layout::RepackResult p = layout::Repack(intervals, 1, r.offsets, goal, repack, deadline);
    if (p.height < r.height) {
      r.offsets = p.offsets;
      r.height = p.height;
      r.status = r.height == r.lower_bound                  ? layout::LayoutStatus::kOptimal
                 : options.capacity > 0 && r.height <= goal ? layout::LayoutStatus::kFeasible
                                                            : layout::LayoutStatus::kTimeLimit;
    }
    r.seconds = SecondsSince(started);
  }
  return {r.offsets,
          r.height,
          r.lower_bound,
          r.warm_start_height,
          std::string(layout::ToString(r.status)),
          r.seconds,
          r.nodes,
          r.partitions};
}

Answer SolveWithIlp(const layout::CsvProblem& problem, std::span<const Interval> intervals,
                    const LayoutOptions& options) {
  for (const layout::CsvRow& row : problem.rows)
    if (row.alignment != 1 || row.offset >= 0)
      throw InputError(options.problem +
                       ": the ilp engine does not support the alignment and offset columns; use "
                       "--engine search");
  ilp::LayoutIlpParams params;
  params.solve.time_limit_s = options.time_limit_s;
  // With a capacity the question is "does it fit": stop at the first layout that does.
  if (options.capacity > 0) params.solve.stop_at_objective = static_cast<double>(options.capacity);
  // The CSV format has no common alignment: every byte offset is allowed.
  const ilp::LayoutIlpResult r = ilp::SolveLayoutIlp(intervals, 1, params);
  return {
      r.offsets, r.height, r.lower_bound, r.warm_start_height, std::string(ilp::ToString(r.status)),
      r.seconds};
}

int RunLayout(const LayoutOptions& options) {
  const layout::CsvProblem problem = layout::LoadLayoutCsv(options.problem);
  const auto intervals = layout::CsvIntervals(problem.rows);
  if (options.engine == "ilp" && options.repack > 0)
    throw InputError("--repack repacks the search's layout; it does not apply to --engine ilp");
  const Answer r = options.engine == "ilp" ? SolveWithIlp(problem, intervals, options)
                                           : SolveWithSearch(problem, intervals, options);
  const bool proven = r.height == r.lower_bound;
  const bool fits = options.capacity == 0 || r.height <= options.capacity;
  const double gap =
      r.height == 0 ? 0.0
                    : static_cast<double>(r.height - r.lower_bound) / static_cast<double>(r.height);
  if (fits && !options.solution.empty())
    WriteFileAtomically(options.solution, layout::LayoutSolutionCsv(problem.rows, r.offsets));

  if (options.json) {
    nlohmann::ordered_json doc;
    doc["problem"] = options.problem;
    doc["engine"] = options.engine;
    doc["buffers"] = problem.rows.size();
    doc["height"] = r.height;
    doc["lower_bound"] = r.lower_bound;
    doc["proven_minimal"] = proven;
    doc["status"] = r.status;
    doc["gap"] = gap;
    doc["warm_start_height"] = r.warm_start_height;
    if (options.capacity > 0) {
      doc["capacity"] = options.capacity;
      doc["fits"] = fits;
    }
    if (r.nodes >= 0) {
      doc["nodes"] = r.nodes;
      doc["partitions"] = r.partitions;
    }
    doc["seconds"] = r.seconds;
    if (fits && !options.solution.empty()) doc["solution"] = options.solution;
    std::cout << doc.dump() << "\n";
  } else {
    std::ostringstream out;
    out << "problem           " << options.problem << " (" << problem.rows.size() << " buffers)\n"
        << "engine            " << options.engine << "\n"
        << "height            " << r.height << " B\n"
        << "lower bound       " << r.lower_bound << " B\n"
        << "minimal           "
        << (proven ? "yes, proven"
                   : "not proven (" + r.status + ", gap " + std::to_string(100.0 * gap) + "%)")
        << "\n"
        << "greedy height     " << r.warm_start_height << " B\n";
    if (options.capacity > 0)
      out << "capacity          " << options.capacity << " B: " << (fits ? "fits" : "does not fit")
          << "\n";
    if (r.nodes >= 0)
      out << "search            " << r.nodes << " nodes, " << r.partitions << " partitions\n";
    out << "solving time      " << r.seconds << " s\n";
    if (fits && !options.solution.empty()) out << "solution written  " << options.solution << "\n";
    std::cout << out.str();
  }
  if (!fits) {
    std::cerr << "roam: no layout within the capacity of " << options.capacity << " B was "
              << (r.status == "infeasible" ? "possible" : "found") << " (best height " << r.height
              << " B, lower bound " << r.lower_bound << " B); nothing written\n";
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
      "[lower, upper), optional alignment, offset, hint) by exact search or the layout ILP; "
      "writes the rows with an offset column");
  cmd->add_option("problem", options->problem, "Problem CSV")->required()->check(CLI::ExistingFile);
  AddOutputFile(*cmd, "-o,--output", options->solution, "Write the solution CSV here");
  cmd->add_option("--capacity", options->capacity,
                  "Memory capacity in bytes: succeed as soon as a layout fits (exit 1, with the "
                  "best height found, if none does)")
      ->check(CLI::Range(Bytes{1}, kMaxBytes));
  cmd->add_option("--time-limit", options->time_limit_s,
                  "Seconds the solver may use (with --repack: the search, then repacking, each)")
      ->check(FiniteNumber(0, kMaxSeconds))
      ->capture_default_str();
  cmd->add_option("--engine", options->engine,
                  "search: MiniMalloc-style exact search (docs/layout.md); ilp: the GLPK layout "
                  "ILP (docs/ilp.md)")
      ->check(CLI::IsMember({"search", "ilp"}))
      ->capture_default_str();
  cmd->add_option("--order", options->order,
                  "search: minimalloc: MiniMalloc's preorders (by duration in the file's time "
                  "units) with the candidate branching leading every round after the first; "
                  "roam: the library's defaults, tuned for training graphs (docs/layout.md)")
      ->check(CLI::IsMember({"minimalloc", "roam"}))
      ->capture_default_str();
  cmd->add_option("--repack", options->repack,
                  "search: where the layout is above the capacity (or the lower bound), lay out "
                  "windows of it again within one alignment less, at most this many windows "
                  "(docs/layout.md, \"Repacking\"); 0: none")
      ->check(CLI::Range(0, 1'000'000))
      ->capture_default_str();
  cmd->add_flag("--json", options->json, "Print the result as one JSON object");
  cmd->callback([options, &action] { action = [options] { return RunLayout(*options); }; });
}

}  // namespace roam::cli
