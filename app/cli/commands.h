// attnviz-cli's subcommands (info, run, decode, bench): argument parsing and the work of each.
// Every error becomes a message on stderr and a non-zero exit code in main().
#pragma once

#include <string>
#include <vector>

namespace attnviz::cli {

int runCommand(const std::vector<std::string>& args);  // args without the program name
std::string usage();

}  // namespace attnviz::cli
