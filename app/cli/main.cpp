// attnviz-cli: scripting, tests and benchmarks on the attnviz core (see `attnviz-cli --help`).
#include <csignal>
#include <exception>
#include <iostream>

#include "base/error.h"
#include "base/safe_text.h"
#include "cli_common.h"
#include "commands.h"

int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write must fail with EFBIG, which is reported, instead of
  // SIGXFSZ ending the process with a half-written file.
  std::signal(SIGXFSZ, SIG_IGN);
  std::vector<std::string> args(argv + 1, argv + argc);
  // Messages may quote names from files: control characters are shown escaped, never sent to the
  // terminal.
  auto error = [](const char* what) {
    std::cerr << "attnviz-cli: error: " << attnviz::terminalSafe(what, true) << "\n";
  };
  try {
    const int code = attnviz::cli::runCommand(args);
    std::cout.flush();
    if (!std::cout) {  // stdout to a full disk or a closed pipe
      error("cannot write the output (standard output failed)");
      return 1;
    }
    return code;
  } catch (const attnviz::Error& e) {
    error(attnviz::cli::commandLineMessage(e).c_str());
    return e.kind() == attnviz::ErrorKind::Usage ? 2 : 1;
  } catch (const std::bad_alloc&) {
    error("out of memory");
    return 1;
  } catch (const std::exception& e) {
    error(e.what());
    return 1;
  }
}
