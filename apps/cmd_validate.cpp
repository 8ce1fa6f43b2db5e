// roam validate: check a plan against its graph with the same validator every plan passes.
#include <iostream>

#include "apps/cli.h"
#include "core/io.h"

namespace roam::cli {

void AddValidateCommand(CLI::App& app, Action& action) {
  auto graph_path = std::make_shared<std::string>();
  auto plan_path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check that PLAN is a valid memory plan for GRAPH (exit 0 valid, 1 invalid)");
  cmd->add_option("graph", *graph_path, "The roam-graph-v1 file")->required();
  cmd->add_option("plan", *plan_path, "The roam-plan-v1 file")->required();
  cmd->callback([=, &action] {
    action = [=] {
      Graph graph = LoadGraph(*graph_path);
      Plan plan = LoadPlan(*plan_path, graph);
      if (std::string problem = ValidatePlan(graph, plan); !problem.empty()) {
        std::cout << *plan_path << ": invalid: " << problem << "\n";
        return static_cast<int>(kFailure);
      }
      std::cout << *plan_path << ": valid plan for " << *graph_path << " (theoretical peak "
                << plan.summary.theoretical_peak << " B, actual peak " << plan.summary.actual_peak
                << " B)\n";
      return static_cast<int>(kOk);
    };
  });
}

}  // namespace roam::cli
