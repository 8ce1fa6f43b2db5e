// roam validate: check a plan against its graph with the same validator every plan passes.
#include <iostream>

#include "apps/cli.h"
#include "core/error.h"
#include "core/io.h"
#include "core/steps.h"
#include "remat/remat.h"

namespace roam::cli {

void AddValidateCommand(CLI::App& app, Action& action) {
  auto graph_path = std::make_shared<std::string>();
  auto plan_path = std::make_shared<std::string>();
  auto original_path = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check that PLAN is a valid memory plan for GRAPH (exit 0 valid, 1 invalid)");
  cmd->add_option("graph", *graph_path, "The roam-graph-v1 file")->required();
  cmd->add_option("plan", *plan_path, "The roam-plan-v1 file")->required();
  MarkInput(
      cmd->add_option("--original", *original_path,
                      "GRAPH is a remat rewrite of this graph: check that it is a faithful one"));
  cmd->callback([=, &action] {
    action = [=] {
      Graph graph = LoadGraph(*graph_path);
      const std::string plan_text = ReadFile(*plan_path);
      // A plan names the graph it was made for: when that is not GRAPH's name, every problem
      // found says so (the likeliest cause is a plan of another model).
      std::string other;
      if (const std::string named = PlanGraphName(plan_text, *plan_path);
          !named.empty() && named != graph.name)
        other = " (the plan was made for graph \"" + named + "\", but " + *graph_path +
                " is graph \"" + graph.name + "\": is it the plan of another graph?)";
      Plan plan;
      try {
        plan = ParsePlan(plan_text, *plan_path, graph);
      } catch (const InputError& e) {
        throw InputError(e.what() + other);
      }
      // A graph with recomputed ops (or one said to rewrite another) must compute the same
      // values as its original (docs/remat.md).
      bool has_copies = false;
      for (OpId op = 0; op < graph.num_ops(); ++op)
        has_copies = has_copies || graph.recomputes(op) != kNoOp;
      if (has_copies || !original_path->empty()) {
        Graph original;
        if (!original_path->empty()) original = LoadGraph(*original_path);
        std::string problem =
            remat::CheckFaithful(graph, original_path->empty() ? nullptr : &original);
        if (!problem.empty()) {
          std::cout << *graph_path << ": not a faithful remat"
                    << (original_path->empty() ? "" : " of " + *original_path) << ": " << problem
                    << "\n";
          return static_cast<int>(kFailure);
        }
      }
      if (std::string problem = ValidatePlan(graph, plan); !problem.empty()) {
        std::cout << *plan_path << ": invalid: " << problem << other << "\n";
        return static_cast<int>(kFailure);
      }
      std::cout << *plan_path << ": valid plan for " << *graph_path << " (theoretical peak "
                << plan.summary.theoretical_peak << " B, actual peak " << plan.summary.actual_peak
                << " B";
      if (!plan.steps.empty())
        std::cout << "; multi-stream: " << NumSteps(plan.order, plan.steps) << " steps, at most "
                  << MaxConcurrency(plan.order, plan.steps) << " ops in one";
      std::cout << ")\n";
      return static_cast<int>(kOk);
    };
  });
}

}  // namespace roam::cli
