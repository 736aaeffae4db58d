// attnviz-cli's commands on CLI11: every command is one function that registers its subcommand
// and options on the app and returns what runs it; commands.cpp lists them (kCommands).
// Adding a command: write cmd_NAME.cpp with `Command addNameCommand(CLI::App& cli)` (cli_common.h
// has the options model commands share), declare it below and add it to kCommands. Every error
// becomes a message on stderr and a non-zero exit code in main().
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>
#include <vector>

namespace attnviz::cli {

struct Command {
  CLI::App* app = nullptr;   // the subcommand CLI11 parsed into
  std::function<int()> run;  // runs it once parsing succeeded; returns the exit code
};

Command addInfoCommand(CLI::App& cli);
Command addRunCommand(CLI::App& cli);
Command addExportHtmlCommand(CLI::App& cli);
Command addDecodeCommand(CLI::App& cli);
Command addLensCommand(CLI::App& cli);
Command addAtlasCommand(CLI::App& cli);
Command addContributionsCommand(CLI::App& cli);
Command addAttributeCommand(CLI::App& cli);
Command addPatchCommand(CLI::App& cli);
Command addBenchCommand(CLI::App& cli);
Command addTrainCommand(CLI::App& cli);
Command addHistoryCommand(CLI::App& cli);
Command addModelsCommand(CLI::App& cli);
Command addConvertCommand(CLI::App& cli);
Command addArchitecturesCommand(CLI::App& cli);

// Parses `args` (without the program name) and runs the command: 0 on success, 2 for wrong
// usage (printed here), else the command's code. Throws attnviz::Error from the commands.
int runCommand(const std::vector<std::string>& args);

}  // namespace attnviz::cli
