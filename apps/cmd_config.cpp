// roam config: the resolved configuration tree (docs/configs.md). --defaults prints the
// planner's and remat's defaults; FILE [--set k=v] prints what that config resolves to, every
// key with its value (defaults filled in) and its one-line doc; --json prints the model and
// training sections as JSON, which tools/torch_export reads instead of parsing the YAML.
#include <iostream>

#include "apps/cli.h"
#include "config/config.h"

namespace roam::cli {
namespace {

struct ConfigOptions {
  std::string path;
  std::vector<std::string> overrides;
  bool defaults = false;
  bool json = false;
};

int RunConfig(const ConfigOptions& options) {
  if (options.defaults) {
    std::cout << config::PrintYaml(nullptr);
    return kOk;
  }
  const config::Config resolved = config::LoadConfig(options.path, options.overrides);
  std::cout << (options.json ? config::PrintModelJson(resolved) : config::PrintYaml(&resolved));
  return kOk;
}

}  // namespace

void AddConfigCommand(CLI::App& app, Action& action) {
  auto options = std::make_shared<ConfigOptions>();
  CLI::App* cmd = app.add_subcommand(
      "config",
      "Print a YAML config resolved (defaults filled in, --set applied), or the defaults");
  CLI::Option* file =
      cmd->add_option("config", options->path, "YAML model config, e.g. configs/gpt2-xl.yaml");
  CLI::Option* defaults = cmd->add_flag("--defaults", options->defaults,
                                        "Print the planner's and remat's defaults, every key");
  file->excludes(defaults);
  cmd->add_option("--set", options->overrides,
                  "Override a config key, e.g. --set model.batch=4 (repeatable)")
      ->excludes(defaults);
  cmd->add_flag("--json", options->json,
                "Print the model and training sections as one JSON object (for tools/torch_export)")
      ->excludes(defaults);
  cmd->callback([options, &action] {
    if (!options->defaults && options->path.empty())
      throw CLI::RequiredError("roam config needs a config file or --defaults");
    action = [options] { return RunConfig(*options); };
  });
}

}  // namespace roam::cli
