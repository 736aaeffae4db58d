// attnviz-cli: scripting, tests and benchmarks on the attnviz core (see `attnviz-cli help`).
#include <exception>
#include <iostream>

#include "commands.h"
#include "error.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  try {
    return attnviz::cli::runCommand(args);
  } catch (const attnviz::Error& e) {
    std::cerr << "attnviz-cli: error: " << e.what() << "\n";
    if (e.kind() == attnviz::ErrorKind::Usage) std::cerr << "\n" << attnviz::cli::usage();
    return e.kind() == attnviz::ErrorKind::Usage ? 2 : 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "attnviz-cli: error: out of memory\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "attnviz-cli: error: " << e.what() << "\n";
    return 1;
  }
}
