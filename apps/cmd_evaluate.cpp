// roam evaluate: plan a graph with the baseline orders and layouts.
#include <chrono>
#include <sstream>

#include "apps/cli.h"
#include "baseline/layouts.h"
#include "baseline/orders.h"
#include "core/deadline.h"
#include "core/error.h"
#include "core/memory_model.h"

namespace roam::cli {
namespace {

struct EvaluateOptions {
  InputOptions input;
  PlanOutputOptions output;
  std::string order = "program";
  std::string layout = "pytorch";
  Bytes alignment = kDefaultAlignment;
  const CLI::Option* alignment_flag = nullptr;  // unset: the input's planner.alignment
};

template <typename Names>
std::string Join(const Names& names) {
  std::ostringstream out;
  for (size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
  return out.str();
}

int RunEvaluate(const EvaluateOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  Input input = LoadInput(options.input);
  const Graph& graph = input.graph;
  const Bytes alignment =
      FlagOr(options.alignment_flag, options.alignment, input.planner.alignment);
  MemoryModel model = BuildMemoryModel(graph, alignment);
  std::vector<OpId> order = ScheduleOrder(options.order, graph, model);
  auto intervals = PlannedIntervals(model, ComputeLifetimes(graph, model, order));
  std::vector<Bytes> offsets = PlaceBuffers(options.layout, intervals, alignment);
  const double seconds = SecondsSince(started);
  Plan plan = AssemblePlan(graph, model, std::move(order), offsets, seconds);
  return EmitPlan(graph, plan, options.output,
                  {{"order", options.order, "\"" + options.order + "\""},
                   {"layout", options.layout, "\"" + options.layout + "\""}});
}

}  // namespace

void AddEvaluateCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<EvaluateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "evaluate", "Plan a graph with a baseline order and layout, validate and summarise it");
  AddInputOptions(*cmd, options->input);
  std::vector<std::string> orders(OrderNames().begin(), OrderNames().end());
  std::vector<std::string> layouts(LayoutNames().begin(), LayoutNames().end());
  cmd->add_option("--order", options->order, "Operator order: " + Join(orders))
      ->check(CLI::IsMember(orders))
      ->capture_default_str();
  cmd->add_option("--layout", options->layout, "Memory layout: " + Join(layouts))
      ->check(CLI::IsMember(layouts))
      ->capture_default_str();
  options->alignment_flag = AddAlignmentOption(*cmd, options->alignment);
  AddPlanOutputOptions(*cmd, options->output);
  cmd->callback([options, &action] { action = [options] { return RunEvaluate(*options); }; });
}

}  // namespace roam::cli
