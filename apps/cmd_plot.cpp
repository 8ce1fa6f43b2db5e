// roam plot: a plan's arena layout, or memory over time against the baselines, as SVG.
#include <iostream>

#include "apps/cli.h"
#include "batch/batch.h"
#include "core/error.h"
#include "core/io.h"
#include "report/svg.h"

namespace roam::cli {
namespace {

struct PlotOptions {
  std::string plan;
  InputOptions graph;
  std::string out;
  std::string what = "layout";
};

int RunPlot(const PlotOptions& o) {
  config::Input input = config::LoadInput(o.graph.path, o.graph.overrides);
  const Graph& graph = input.graph;
  Plan plan = LoadPlan(o.plan, graph);
  if (std::string problem = ValidatePlan(graph, plan); !problem.empty())
    throw InputError(o.plan + ": not a valid plan for " + o.graph.path + ": " + problem);
  MemoryModel model = BuildMemoryModel(graph, plan.alignment);
  std::string svg;
  if (o.what == "layout") {
    report::LayoutPlotParams params;
    params.theoretical_peak = plan.summary.theoretical_peak;
    params.lower_bound = batch::CertifiedLowerBound(graph, model);
    report::LayoutPlotStats stats;
    svg = report::LayoutSvg(graph, plan, params, &stats);
    std::cout << stats.buffers << " buffers in " << stats.rectangles << " rectangles ("
              << stats.aggregated_rectangles << " aggregates)\n";
  } else {
    // A multi-stream plan is drawn beside the multi-stream baselines.
    OptimizerParams planner;
    if (!plan.steps.empty()) planner.streams = Streams::kMulti;
    batch::Baselines b = batch::PlanBaselines(graph, model, planner);
    // Each with its total peak: persistent bytes plus the arena, fragmentation included.
    svg = report::MemorySvg(
        {{"plan", batch::MemoryOverTime(graph, plan), plan.summary.total_peak},
         {"pytorch", batch::MemoryOverTime(graph, b.pytorch), b.pytorch.summary.total_peak},
         {"best heuristic (" + b.heuristic_name + ")", batch::MemoryOverTime(graph, b.heuristic),
          b.heuristic.summary.total_peak}},
        plan.graph + ": memory over time");
  }
  WriteFileAtomically(o.out, svg);
  std::cout << "plot written to " << o.out << "\n";
  return kOk;
}

}  // namespace

void AddPlotCommand(CLI::App& app, Action& action) {
  auto o = std::make_shared<PlotOptions>();
  CLI::App* cmd = app.add_subcommand(
      "plot", "Draw a plan as SVG: its arena layout, or memory over time against the baselines");
  cmd->add_option("plan", o->plan, "Plan (roam-plan-v1)")->required();
  MarkInput(
      cmd->add_option("--graph", o->graph.path, "The plan's graph or YAML config")->required());
  cmd->add_option("--set", o->graph.overrides, "Override a config key (repeatable)");
  AddOutputFile(*cmd, "-o,--output", o->out, "SVG file to write")->required();
  cmd->add_option("--what", o->what, "layout or memory")
      ->check(CLI::IsMember({"layout", "memory"}))
      ->capture_default_str();
  cmd->callback([o, &action] { action = [o] { return RunPlot(*o); }; });
}

}  // namespace roam::cli
