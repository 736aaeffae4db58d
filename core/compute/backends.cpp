#include "compute/backends.h"

#include "base/error.h"
#include "compute/cpu_backend.h"

#ifdef ATTNVIZ_HAVE_CUDA
#include "compute/cuda_plugin_loader.h"
#endif

namespace attnviz {

bool cudaCompiledIn() {
#ifdef ATTNVIZ_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string cudaUnavailableReason() {
#ifdef ATTNVIZ_HAVE_CUDA
  const cuda::LoadedPlugin& plugin = cuda::loadPlugin();
  if (!plugin.api) return plugin.error;
  return plugin.api->unavailable_reason();
#else
  return "this build of attnviz has no CUDA backend (nvcc was not found at configure time)";
#endif
}

std::string cudaPluginPath() {
#ifdef ATTNVIZ_HAVE_CUDA
  const cuda::LoadedPlugin& plugin = cuda::loadPlugin();
  return plugin.api ? plugin.path : std::string();
#else
  return {};
#endif
}

std::shared_ptr<Backend> createBackend(const std::string& name) {
  if (name == "cpu") return makeCpuBackend();
  if (name == "cuda") {
    std::string why = cudaUnavailableReason();
    if (!why.empty()) throw Error(ErrorKind::Backend, "CUDA backend unavailable: " + why);
#ifdef ATTNVIZ_HAVE_CUDA
    return cuda::loadPlugin().api->make_backend();
#endif
  }
  throw Error(ErrorKind::Usage, "unknown backend '" + name + "' (expected cpu or cuda)");
}

BackendChoice createBackendOrFallback(const std::string& preferred) {
  if (preferred == "cpu") return {makeCpuBackend(), ""};
  try {
    return {createBackend(preferred), ""};
  } catch (const Error& e) {
    return {makeCpuBackend(), std::string(e.what()) + "; using the CPU instead"};
  }
}

}  // namespace attnviz
