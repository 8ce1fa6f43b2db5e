// roam optimize: plan a graph with an exact mode. Modes: model (whole-graph MODeL ILPs).
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "apps/cli.h"
#include "baseline/orders.h"
#include "core/memory_model.h"
#include "ilp/whole_graph.h"

namespace roam::cli {
namespace {

struct OptimizeOptions {
  InputOptions input;
  PlanOutputOptions output;
  std::string mode;
  double time_limit_s = gen::PlannerParams{}.time_limit;
  Bytes alignment = kDefaultAlignment;
  // Unset flags leave the input's planner.time_limit and planner.alignment in force.
  const CLI::Option* time_limit_flag = nullptr;
  const CLI::Option* alignment_flag = nullptr;
  std::string warm_order = "heuristic";  // warm start of the order ILP
};

SummaryExtra Part(const std::string& key, const ilp::PartReport& part, const char* what) {
  char text[256];
  std::snprintf(text, sizeof text,
                "%s, %s %lld B (heuristic %lld B, bound %lld B, gap %.2f%%, %.2f s)",
                std::string(ilp::ToString(part.outcome)).c_str(), what,
                static_cast<long long>(part.value), static_cast<long long>(part.warm_start),
                static_cast<long long>(part.lower_bound), 100.0 * part.gap, part.seconds);
  nlohmann::ordered_json j;
  j["outcome"] = std::string(ilp::ToString(part.outcome));
  j["status"] = std::string(ilp::ToString(part.status));
  j[what] = part.value;
  j["heuristic"] = part.warm_start;
  j["lower_bound"] = part.lower_bound;
  j["gap"] = part.gap;
  j["seconds"] = part.seconds;
  j["note"] = part.note;
  return {key, text, j.dump()};
}

int RunOptimize(const OptimizeOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  Input input = LoadInput(options.input);
  const Graph& graph = input.graph;
  MemoryModel model = BuildMemoryModel(
      graph, FlagOr(options.alignment_flag, options.alignment, input.planner.alignment));
  std::vector<OpId> warm = ScheduleOrder(options.warm_order, graph, model);
  ilp::WholeGraphParams params;
  params.time_limit_s = SolverSeconds(
      FlagOr(options.time_limit_flag, options.time_limit_s, input.planner.time_limit));
  ilp::WholeGraphResult r = ilp::OptimizeWholeGraph(graph, model, warm, params);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  Plan plan = AssemblePlan(graph, model, std::move(r.order), r.offsets, seconds);
  return EmitPlan(graph, plan, options.output,
                  {{"mode", options.mode, "\"" + options.mode + "\""},
                   {"warm start", options.warm_order, "\"" + options.warm_order + "\""},
                   Part("order", r.order_part, "peak"),
                   Part("layout", r.layout_part, "height")});
}

}  // namespace

void AddOptimizeCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<OptimizeOptions>();
  CLI::App* cmd =
      app.add_subcommand("optimize",
                         "Plan a graph with an exact optimizer; always writes a valid plan, saying "
                         "which parts are optimal, time-limited or heuristic");
  AddInputOptions(*cmd, options->input);
  cmd->add_option("--mode", options->mode,
                  "model: MODeL's order ILP then layout ILP on the whole graph")
      ->required()
      ->check(CLI::IsMember({"model"}));
  options->time_limit_flag =
      cmd->add_option("--time-limit", options->time_limit_s,
                      "Seconds for the solvers (half for the order, the rest for the layout); 0 = "
                      "no limit (default: the config's planner.time_limit)")
          ->check(CLI::NonNegativeNumber)
          ->capture_default_str();
  options->alignment_flag = AddAlignmentOption(*cmd, options->alignment);
  std::vector<std::string> orders(OrderNames().begin(), OrderNames().end());
  cmd->add_option("--warm-order", options->warm_order,
                  "Baseline order the order ILP starts from (and falls back to)")
      ->check(CLI::IsMember(orders))
      ->capture_default_str();
  AddPlanOutputOptions(*cmd, options->output);
  cmd->callback([options, &action] { action = [options] { return RunOptimize(*options); }; });
}

}  // namespace roam::cli
