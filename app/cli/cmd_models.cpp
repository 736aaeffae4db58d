// attnviz-cli models: the bundled models' names and files.
#include <iostream>

#include "arch/bundled.h"
#include "cli_common.h"
#include "commands.h"

namespace attnviz::cli {

Command addModelsCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand("models", "list the bundled models (name and file)");
  return {cmd, [] {
            for (const auto& m : listBundledModels())
              std::cout << safe(m.name) << "\t" << safe(m.path) << "\n";
            return 0;
          }};
}

}  // namespace attnviz::cli
