#include "commands.h"

#include <algorithm>
#include <iostream>

#include "base/error.h"

namespace attnviz::cli {

namespace {

// Every command, in the order `attnviz-cli --help` lists them.
using AddCommand = Command (*)(CLI::App&);
constexpr AddCommand kCommands[] = {
    addInfoCommand,    addRunCommand,           addExportHtmlCommand,    addDecodeCommand,
    addLensCommand,    addContributionsCommand, addAtlasCommand,         addAttributeCommand,
    addPatchCommand,   addConvertCommand,       addBenchCommand,         addTrainCommand,
    addHistoryCommand, addModelsCommand,        addArchitecturesCommand,
};

}  // namespace

int runCommand(const std::vector<std::string>& args) {
  CLI::App cli("attnviz-cli: scripting, tests and benchmarks on the attnviz core", "attnviz-cli");
  cli.footer(
      "MODEL is a .safetensors file or the name of a bundled model (attnviz-cli models).\n"
      "attnviz-cli COMMAND --help lists a command's options.");
  cli.require_subcommand(1);
  // An option given twice is an error, never "the last one wins"; so is an unknown one.
  cli.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::Throw);
  std::vector<Command> commands;
  for (AddCommand add : kCommands) commands.push_back(add(cli));

  if (args.empty()) {  // no command: the overview, and the status of wrong usage
    std::cout << cli.help();
    return 2;
  }
  if (args[0] == "help") {  // `help` and `help COMMAND`
    CLI::App* about = &cli;
    if (args.size() > 1) {
      try {
        about = cli.get_subcommand(args[1]);
      } catch (const CLI::OptionNotFound&) {
        throw Error(ErrorKind::Usage, "unknown command \"" + args[1] + "\"");
      }
    }
    std::cout << (about == &cli ? cli.help() : about->help(cli.get_name()));
    return 0;
  }
  if (args[0].empty() || args[0][0] != '-') {
    bool known = false;
    for (const Command& c : commands) known = known || c.app->get_name() == args[0];
    if (!known)
      throw Error(ErrorKind::Usage,
                  "unknown command \"" + args[0] + "\" (attnviz-cli --help lists the commands)");
  }
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    cli.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);  // the help of the command asked about
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return cli.exit(e);
    std::string where = "attnviz-cli";
    for (const CLI::App* sub : cli.get_subcommands()) where += " " + sub->get_name();
    throw Error(ErrorKind::Usage, std::string(e.what()) + " (" + where + " --help lists the " +
                                      (where == "attnviz-cli" ? "commands" : "options") + ")");
  }
  for (const Command& c : commands)
    if (c.app->parsed()) return c.run();
  throw Error(ErrorKind::Usage, "no command given (attnviz-cli --help lists them)");
}

}  // namespace attnviz::cli
