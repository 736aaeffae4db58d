// attnviz-cli convert MODEL OUT.safetensors: a model from a PyTorch checkpoint (or a safetensors
// file without its config) written as one safetensors file that carries its config.
#include <iostream>

#include "arch/bundled.h"
#include "arch/weights.h"
#include "cli_common.h"
#include "commands.h"

namespace attnviz::cli {

namespace {

struct ConvertArgs {
  ModelArgs model;
  std::string out;
};

int runConvert(const ConvertArgs& a) {
  const LoadOptions lo = loadOptions(a.model);
  const std::string in = resolveModelPath(a.model.model);
  auto lm = convertToSafetensors(in, a.out, lo);
  rememberIfAsked(a.model, lm->path, lo);
  for (const auto& n : lm->notes) std::cerr << "attnviz-cli: " << safe(n) << "\n";
  for (const auto& w : lm->warnings) std::cerr << "attnviz-cli: warning: " << safe(w) << "\n";
  std::cout << "wrote " << safe(a.out) << " (" << lm->config.family << ", " << lm->config.model
            << ", config in its metadata)\n";
  return 0;
}

}  // namespace

Command addConvertCommand(CLI::App& cli) {
  auto* cmd = cli.add_subcommand(
      "convert",
      "write MODEL as one .safetensors file with its config inside: it then opens with no "
      "answers, config file or Python");
  auto a = std::make_shared<ConvertArgs>();
  addModelArgs(cmd, a->model, /*required=*/true, /*backend=*/false);
  cmd->add_option("OUT", a->out, "the .safetensors file to write (whole or not at all)")
      ->required()
      ->type_name("OUT.safetensors");
  return {cmd, [a] { return runConvert(*a); }};
}

}  // namespace attnviz::cli
