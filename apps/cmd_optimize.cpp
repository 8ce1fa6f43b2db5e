// roam optimize: plan a graph with the optimizer (optimizer/optimizer.h); flags and printing only.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "apps/cli.h"
#include "core/error.h"
#include "core/io.h"
#include "core/steps.h"
#include "optimizer/optimizer.h"

namespace roam::cli {
namespace {

constexpr int kInterrupted = 130;  // 128 + SIGINT, as shells report it

std::atomic<bool> g_stop{false};
std::atomic<std::int64_t> g_first_interrupt_ns{0};
static_assert(std::atomic<std::int64_t>::is_always_lock_free, "used in a signal handler");

// A repeat this soon after the first is the same request delivered twice: `timeout` and other
// supervisors signal the child and then its whole process group.
constexpr std::int64_t kSameInterruptNs = 1'000'000'000;

// First Ctrl-C: ask the optimizer to stop and write what it has. A second, later one: leave at
// once. Only async-signal-safe calls here (clock_gettime, _exit, lock-free atomics).
extern "C" void OnInterrupt(int) {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const std::int64_t ns = static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  std::int64_t first = 0;
  if (g_first_interrupt_ns.compare_exchange_strong(first, ns)) {
    g_stop = true;
    return;
  }
  if (ns - first >= kSameInterruptNs) _exit(kInterrupted);
}

struct OptimizeOptions {
  InputOptions input;
  PlanOutputOptions output;
  std::string mode;
  std::string streams;
  int max_concurrency = 0;
  int threads = 0;
  int node_limit = 0;
  double time_limit_s = 0;
  double leaf_time_limit_s = 0;
  Bytes alignment = kDefaultAlignment;
  bool quiet = false;
  bool no_bound_shortcut = false;
  // Unset flags leave the input's planner section in force (FlagOr).
  const CLI::Option *mode_flag = nullptr, *streams_flag = nullptr, *max_concurrency_flag = nullptr,
                    *threads_flag = nullptr, *node_limit_flag = nullptr, *time_limit_flag = nullptr,
                    *leaf_time_limit_flag = nullptr, *alignment_flag = nullptr;
};

std::string Percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * fraction);
  return text;
}

double Reduction(Bytes ours, Bytes theirs) {
  return theirs > 0 ? 1.0 - static_cast<double>(ours) / static_cast<double>(theirs) : 0.0;
}

nlohmann::ordered_json FiguresJson(const PlanFigures& f) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(SummaryToJson(f.summary));
  j["name"] = f.name;
  j["order"] = f.order;
  j["layout"] = f.layout;
  return j;
}

std::string Table(const OptimizeResult& r) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %16s %16s %8s %16s %9s\n", "", "theoretical", "actual",
                "frag", "total", "seconds");
  out << line;
  auto row = [&](const std::string& name, const PlanSummary& s) {
    std::snprintf(line, sizeof line, "%-10s %16lld %16lld %8s %16lld %9.3f\n", name.c_str(),
                  static_cast<long long>(s.theoretical_peak), static_cast<long long>(s.actual_peak),
                  Percent(s.fragmentation).c_str(), static_cast<long long>(s.total_peak),
                  s.seconds);
    out << line;
  };
  for (const PlanFigures& b : r.baselines) row(b.name, b.summary);
  row(r.pipeline.name, r.pipeline.summary);
  if (r.baseline_won) row("returned", r.plan.summary);
  out << "(bytes; the " << r.pipeline.name << " row is the pipeline's own plan)\n";
  for (const PlanFigures& b : r.baselines)
    out << "reduction vs " << b.name
        << std::string(b.name.size() < 10 ? 10 - b.name.size() : 1, ' ')
        << Percent(Reduction(r.plan.summary.total_peak, b.summary.total_peak)) << " of total peak ("
        << b.order << " order, " << b.layout << " layout)\n";
  return out.str();
}

int RunOptimize(const OptimizeOptions& options) {
  // From the start, so that a Ctrl-C while the input loads also ends in the best plan (the
  // start plan, made at once) rather than in a kill.
  g_stop = false;
  g_first_interrupt_ns = 0;
  struct sigaction action = {}, previous = {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, &previous);
  // The time limit is for the whole run: it starts before the input is loaded or generated.
  const auto started = Deadline::Clock::now();
  Input input = LoadInput(options.input);
  const Graph& graph = input.graph;
  OptimizerParams params = input.planner;
  if (options.mode_flag != nullptr && options.mode_flag->count() > 0)
    ParseOptimizeMode(options.mode, &params.mode);
  if (options.streams_flag != nullptr && options.streams_flag->count() > 0)
    ParseStreams(options.streams, &params.streams);
  params.max_concurrency =
      FlagOr(options.max_concurrency_flag, options.max_concurrency, params.max_concurrency);
  if (params.max_concurrency > 0 && params.streams != Streams::kMulti)
    throw InputError("--max-concurrency " + std::to_string(params.max_concurrency) +
                     " (or planner.max_concurrency) needs --streams multi (or planner.streams: "
                     "multi): a single-stream plan runs one op per step");
  params.threads = FlagOr(options.threads_flag, options.threads, params.threads);
  params.partition.node_limit =
      FlagOr(options.node_limit_flag, options.node_limit, params.partition.node_limit);
  params.time_limit = FlagOr(options.time_limit_flag, options.time_limit_s, params.time_limit);
  const double leaf_limit =
      FlagOr(options.leaf_time_limit_flag, options.leaf_time_limit_s, params.leaf_order.time_limit);
  params.leaf_order.time_limit = leaf_limit;
  params.alignment = FlagOr(options.alignment_flag, options.alignment, params.alignment);
  if (options.no_bound_shortcut) params.bound_shortcut = false;

  RunControl control;
  control.stop = &g_stop;
  control.started = started;
  const bool show_progress = !options.quiet && ::isatty(STDERR_FILENO) != 0;
  if (show_progress) {
    control.progress = [](const Progress& p) {
      if (p.leaves_total > 0)
        std::fprintf(stderr, "\r\033[K[roam] %s %d/%d, %.1f s", p.stage, p.leaves_done,
                     p.leaves_total, p.elapsed);
      else
        std::fprintf(stderr, "\r\033[K[roam] %s, %.1f s", p.stage, p.elapsed);
      std::fflush(stderr);
    };
  }
  OptimizeResult r = Optimize(graph, params, control);
  if (show_progress) std::fprintf(stderr, "\r\033[K");

  const std::string order_label(ToString(r.order_outcome)),
      layout_label(ToString(r.layout_outcome));
  std::vector<SummaryExtra> extra;
  auto text = [](const std::string& s) { return nlohmann::ordered_json(s).dump(); };
  extra.push_back({"mode", std::string(ToString(r.mode)), text(std::string(ToString(r.mode)))});
  // Only multi-stream runs say so: single-stream output stays as it was.
  if (r.streams == Streams::kMulti) {
    const std::string streams =
        "multi (" + std::to_string(NumSteps(r.plan.order, r.plan.steps)) + " steps, at most " +
        std::to_string(MaxConcurrency(r.plan.order, r.plan.steps)) + " ops in one" +
        (params.max_concurrency > 0 ? ", limit " + std::to_string(params.max_concurrency) : "") +
        ")";
    extra.push_back({"streams", streams, text("multi")});
  }
  extra.push_back({"lower_bound", FormatBytes(r.lower_bound) + " (certified: forced residency)",
                   nlohmann::ordered_json(r.lower_bound).dump()});
  extra.push_back({"gap", Percent(r.gap) + " of the theoretical peak above the bound",
                   nlohmann::ordered_json(r.gap).dump()});
  extra.push_back({"order", order_label, text(order_label)});
  extra.push_back({"layout", layout_label, text(layout_label)});
  const LeafCounts& c = r.leaves;
  nlohmann::ordered_json leaves = {{"total", c.total},
                                   {"sent_to_solver", c.sent_to_solver},
                                   {"proved_optimal", c.proved_optimal},
                                   {"time_limited", c.time_limited},
                                   {"work_limited", c.work_limited},
                                   {"skipped_by_bound", c.skipped_by_bound},
                                   {"single_op", c.single_op},
                                   {"not_started", c.not_started},
                                   {"solver_errors", c.solver_errors},
                                   {"layouts_solved", c.layouts_solved},
                                   {"layouts_proved_optimal", c.layouts_proved_optimal},
                                   {"layouts_work_limited", c.layouts_work_limited},
                                   {"layouts_time_limited", c.layouts_time_limited}};
  if (r.mode == OptimizeMode::kRoam) {
    std::ostringstream t;
    t << c.total << " total, " << c.sent_to_solver << " sent to a solver, " << c.proved_optimal
      << " proved optimal, " << c.work_limited << " work-limited, " << c.time_limited
      << " time-limited, " << c.skipped_by_bound << " skipped (cannot lower the peak)";
    if (c.single_op > 0) t << ", " << c.single_op << " single-op (nothing to order)";
    if (c.not_started > 0) t << ", " << c.not_started << " not started (time)";
    if (c.solver_errors > 0) t << ", " << c.solver_errors << " solver errors (warm start kept)";
    t << "; layouts: " << c.layouts_solved << " solved, " << c.layouts_proved_optimal
      << " proved optimal, " << c.layouts_work_limited << " work-limited, "
      << c.layouts_time_limited << " time-limited";
    extra.push_back({"leaves", t.str(), leaves.dump()});
  }
  nlohmann::ordered_json baselines = nlohmann::ordered_json::array();
  for (const PlanFigures& b : r.baselines) baselines.push_back(FiguresJson(b));
  extra.push_back({"baselines", "", baselines.dump()});
  extra.push_back({"pipeline", "", FiguresJson(r.pipeline).dump()});
  extra.push_back({"baseline_won", r.baseline_won ? "yes: the best baseline plan is returned" : "",
                   r.baseline_won ? "true" : "false"});
  nlohmann::ordered_json notes = r.notes;
  std::string note_text;
  for (const std::string& n : r.notes) note_text += (note_text.empty() ? "" : "; ") + n;
  extra.push_back({"notes", note_text, notes.dump()});
  extra.push_back({"interrupted", r.interrupted ? "yes: the best plan found so far" : "",
                   r.interrupted ? "true" : "false"});
  // Empty lines of text mode are left out.
  if (!options.output.json) {
    std::erase_if(extra, [](const SummaryExtra& e) { return e.text.empty(); });
    std::cout << Table(r) << "\n";
  }
  const int code = EmitPlan(graph, r.plan, options.output, extra);
  sigaction(SIGINT, &previous, nullptr);
  if (code == kOk && r.interrupted) {
    std::cerr << "roam: interrupted; the best valid plan found so far was "
              << (options.output.plan_path.empty() ? "kept" : "written") << "\n";
    return kInterrupted;
  }
  return code;
}

}  // namespace

void AddOptimizeCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<OptimizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "optimize",
      "Plan a graph with ROAM's optimizer (or MODeL's whole-graph ILPs); always writes a valid "
      "plan, never worse than the best baseline, saying which parts are optimal, time-limited or "
      "heuristic");
  AddInputOptions(*cmd, options->input);
  options->mode_flag =
      cmd->add_option("--mode", options->mode,
                      "roam: partition, solve leaves concurrently, merge; model: order ILP then "
                      "layout ILP on the whole graph (default: the config's planner.mode, roam)")
          ->check(CLI::IsMember({"roam", "model"}));
  options->streams_flag =
      cmd->add_option("--streams", options->streams,
                      "single: one op per step; multi: several independent ops per step on "
                      "concurrent streams, a plan with steps (MODeL-MS with --mode model) "
                      "(default: the config's planner.streams, single)")
          ->check(CLI::IsMember({"single", "multi"}));
  options->max_concurrency_flag =
      cmd->add_option("--max-concurrency", options->max_concurrency,
                      "With --streams multi: the most ops in one step; 0 = unbounded, as MODeL "
                      "(default: the config's planner.max_concurrency, 0)")
          ->check(CLI::NonNegativeNumber);
  options->threads_flag =
      cmd->add_option("--threads", options->threads,
                      "Worker threads for leaf solves; 0 = all cores (default: planner.threads)")
          ->check(ThreadCount());
  options->node_limit_flag =
      cmd->add_option("--node-limit", options->node_limit,
                      "Most ops in one leaf (default: planner.partition.node_limit)")
          ->check(CLI::PositiveNumber);
  options->time_limit_flag =
      cmd->add_option("--time-limit", options->time_limit_s,
                      "Seconds for the whole run, solver overshoot included; 0 = no limit "
                      "(default: planner.time_limit_s)")
          ->check(FiniteNumber(0, kMaxSeconds));
  options->leaf_time_limit_flag =
      cmd->add_option("--leaf-time-limit", options->leaf_time_limit_s,
                      "Seconds the order ILP may spend on one leaf: an outer cap, the work limit "
                      "planner.leaf_order.max_lp_iterations and max_lp_work decide first (default: "
                      "planner.leaf_order.time_limit_s)")
          ->check(FiniteNumber(0, kMaxSeconds));
  options->alignment_flag = AddAlignmentOption(*cmd, options->alignment);
  cmd->add_flag("--no-bound-shortcut", options->no_bound_shortcut,
                "Send every leaf of more than one op to the order ILP, even those that cannot "
                "lower the peak (default: planner.bound_shortcut)");
  cmd->add_flag("--quiet", options->quiet, "No progress line on the terminal");
  AddPlanOutputOptions(*cmd, options->output);
  cmd->callback([options, &action] { action = [options] { return RunOptimize(*options); }; });
}

}  // namespace roam::cli
