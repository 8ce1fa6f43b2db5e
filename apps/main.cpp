// roam: memory plans (operator order + arena layout) for DNN training graphs.
#include <exception>
#include <iostream>
#include <string>

#include "apps/cli.h"
#include "core/error.h"

int main(int argc, char** argv) {
  using namespace roam::cli;
  CLI::App app{
      "roam: lowers the peak memory of a training step by reordering operators and laying\n"
      "out every tensor in one arena. Exit status: 0 success, 1 invalid plan or internal\n"
      "failure, 2 bad input or usage."};
  app.set_version_flag("--version", "roam 0.1.0");
  app.require_subcommand(1);
  Action action;
  AddEvaluateCommand(app, action);
  AddValidateCommand(app, action);
  AddExportGraphCommand(app, action);
  AddConfigCommand(app, action);
  AddPartitionCommand(app, action);
  AddLayoutCommand(app, action);
  AddOptimizeCommand(app, action);
  AddRematCommand(app, action);
  AddImportNodeLinkCommand(app, action);
  AddBatchCommand(app, action);
  AddBenchCommand(app, action);
  AddMergeResultsCommand(app, action);
  AddPlotCommand(app, action);
  // A first argument that is not an option must name a command.
  if (argc > 1 && argv[1][0] != '-') {
    std::string commands;
    bool known = false;
    for (const CLI::App* cmd : app.get_subcommands([](const CLI::App*) { return true; })) {
      known = known || cmd->get_name() == argv[1];
      commands += (commands.empty() ? "" : ", ") + cmd->get_name();
    }
    if (!known) {
      std::cerr << "roam: error: unknown command '" << argv[1] << "'; the commands are " << commands
                << " (roam --help describes them)\n";
      return kBadInput;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kBadInput;
  }
  for (const CLI::App* cmd : app.get_subcommands()) {
    if (std::string problem = CheckOutputs(*cmd); !problem.empty()) {
      std::cerr << "roam: error: " << problem << "\n";
      return kBadInput;
    }
  }
  try {
    return action();
  } catch (const roam::InputError& e) {
    std::cerr << "roam: error: " << e.what() << "\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "roam: internal error: " << e.what() << "\n";
    return kFailure;
  }
}
