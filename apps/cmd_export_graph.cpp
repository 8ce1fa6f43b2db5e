// roam export-graph: generate the training-step graph a YAML config describes.
#include <iostream>

#include "apps/cli.h"
#include "config/config.h"
#include "core/io.h"
#include "gen/generate.h"

namespace roam::cli {
namespace {

struct ExportOptions {
  std::string config_path;
  std::vector<std::string> overrides;
  std::string graph_path;
};

int RunExport(const ExportOptions& options) {
  gen::Config config = roam::config::LoadConfig(options.config_path, options.overrides);
  Graph graph = gen::GenerateGraph(config);
  WriteFileAtomically(options.graph_path, GraphToJson(graph));
  std::cout << "wrote " << options.graph_path << ": " << graph.name << ", " << graph.num_ops()
            << " ops, " << graph.num_tensors() << " tensors\n";
  return kOk;
}

}  // namespace

void AddExportGraphCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "export-graph", "Generate the training-step graph of a YAML model config (roam-graph-v1)");
  cmd->add_option("config", options->config_path, "YAML model config, e.g. configs/gpt2-xl.yaml")
      ->required();
  AddOutputFile(*cmd, "-o,--output", options->graph_path,
                "Write the graph (roam-graph-v1 JSON) here")
      ->required();
  cmd->add_option("--set", options->overrides,
                  "Override a config key, e.g. --set model.batch=4 (repeatable)");
  cmd->callback([options, &action] { action = [options] { return RunExport(*options); }; });
}

}  // namespace roam::cli
