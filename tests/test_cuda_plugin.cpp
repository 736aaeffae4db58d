// The CUDA plugin as the programs load it (core/compute/cuda_plugin_loader.h), without a GPU: it
// loads, its build id matches, an attnviz::Error thrown inside it is caught here as one (exceptions
// and RTTI cross the dlopen boundary), and asking it for a device never throws. Plain program;
// exits 77 (skipped) when the plugin cannot be loaded here (no CUDA libraries).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/error.h"
#include "compute/backends.h"
#include "compute/cuda_plugin_loader.h"

using namespace attnviz;

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string& what, const std::string& got = {}) {
  ++(ok ? passed : failed);
  if (!ok) std::printf("FAIL %s%s%s\n", what.c_str(), got.empty() ? "" : ": ", got.c_str());
}

}  // namespace

int main() {
  // The search order: next to the executable, the install layout, the build tree; or the
  // environment's choice alone.
  unsetenv("ATTNVIZ_CUDA_PLUGIN");
  const auto found = cuda::pluginCandidates("/opt/x/bin");
  check(found.size() == 3 && found[0] == "/opt/x/bin/libattnviz_cuda.so" &&
            found[1].rfind("/opt/x/bin/../", 0) == 0 &&
            found[1].find("/attnviz/libattnviz_cuda.so") != std::string::npos,
        "pluginCandidates", found.empty() ? "" : found[1]);
  setenv("ATTNVIZ_CUDA_PLUGIN", "/elsewhere/p.so", 1);
  check(cuda::pluginCandidates("/opt/x/bin") == std::vector<std::string>{"/elsewhere/p.so"},
        "ATTNVIZ_CUDA_PLUGIN overrides the search");
  unsetenv("ATTNVIZ_CUDA_PLUGIN");

  const cuda::LoadedPlugin& plugin = cuda::loadPlugin();
  if (!plugin.api) {
    std::printf("SKIP the CUDA plugin does not load here: %s\n", plugin.error.c_str());
    return 77;
  }
  std::printf("plugin: %s (architectures %s)\n", plugin.path.c_str(), plugin.api->architectures);
  check(cudaPluginPath() == plugin.path, "cudaPluginPath", cudaPluginPath());

  // An Error thrown in the plugin arrives as attnviz::Error with its kind and message.
  std::string caught = "nothing";
  try {
    plugin.api->throw_error("thrown inside the plugin");
  } catch (const Error& e) {
    caught = e.kind() == ErrorKind::Backend ? e.what() : "an Error of another kind";
  } catch (const std::exception& e) {
    caught = std::string("only as std::exception: ") + e.what();
  } catch (...) {
    caught = "only with catch (...)";
  }
  check(caught == "thrown inside the plugin", "exceptions cross the plugin boundary", caught);

  // Never throws; here (no driver, or a GPU) it returns a reason or nothing.
  std::string reason;
  try {
    reason = plugin.api->unavailable_reason();
    check(reason == cudaUnavailableReason(), "cudaUnavailableReason is the plugin's reason",
          reason);
  } catch (...) {
    check(false, "unavailable_reason threw");
  }
  std::printf("CUDA here: %s\n", reason.empty() ? "available" : reason.c_str());
  if (!reason.empty()) {
    // createBackend says why, as an Error of kind Backend.
    std::string why;
    try {
      createBackend("cuda");
    } catch (const Error& e) {
      why = e.kind() == ErrorKind::Backend ? e.what() : "";
    }
    check(why == "CUDA backend unavailable: " + reason, "createBackend(\"cuda\") says why", why);
  }
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
