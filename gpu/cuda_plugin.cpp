// The CUDA plugin's entry points (cuda_plugin.h): the only symbols libattnviz_cuda.so exports.
#include "compute/cuda_plugin.h"

#include "base/error.h"
#include "cuda_backend.h"

#ifndef ATTNVIZ_BUILD_ID
#error "ATTNVIZ_BUILD_ID must be defined by the build (gpu/CMakeLists.txt)"
#endif
#ifndef ATTNVIZ_CUDA_ARCHITECTURES
#define ATTNVIZ_CUDA_ARCHITECTURES "?"
#endif

namespace {

std::string unavailableReason() {
  try {
    return attnviz::cuda::deviceUnavailableReason();
  } catch (const std::exception& e) {  // never expected; the loader's promise is "never throws"
    return e.what();
  }
}

void throwError(const char* message) {
  throw attnviz::Error(attnviz::ErrorKind::Backend, message);
}

const attnviz::cuda::PluginApi kApi{&unavailableReason, &attnviz::cuda::makeCudaBackend,
                                    &throwError, ATTNVIZ_CUDA_ARCHITECTURES};

}  // namespace

extern "C" __attribute__((visibility("default"))) const char* attnviz_cuda_plugin_build_id() {
  return ATTNVIZ_BUILD_ID;
}

extern "C" __attribute__((visibility("default"))) const attnviz::cuda::PluginApi*
attnviz_cuda_plugin_api() {
  return &kApi;
}
