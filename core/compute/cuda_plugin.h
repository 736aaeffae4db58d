// The boundary between attnviz and its CUDA plugin, libattnviz_cuda.so: the one shared module that
// links libcudart and cuBLAS. backends.cpp loads it with dlopen when CUDA is first asked for, so
// the CLI, the application and the tests start (and run on the CPU) where CUDA is missing.
#pragma once

#include <memory>
#include <string>

#include "compute/backend.h"

namespace attnviz::cuda {

// What the plugin hands to the loader. The plugin and the programs come from one build (the build
// id below guards that), so C++ types, exceptions and RTTI cross the boundary: a call may throw
// attnviz::Error, which the program catches as its own (libstdc++ matches exception types by
// name, and the plugin is built with the same compiler and standard library).
struct PluginApi {
  // Empty when device 0 can run this build's kernels now; otherwise why not. Never throws.
  std::string (*unavailable_reason)();
  // The backend on device 0. Throws Error(Backend) when it cannot be created.
  std::shared_ptr<Backend> (*make_backend)();
  // Throws Error(ErrorKind::Backend, message): lets a test check that exceptions cross.
  void (*throw_error)(const char* message);
  // The CUDA architectures the plugin's kernels were built for, e.g. "75-real 80-real 75-virtual".
  const char* architectures;
};

}  // namespace attnviz::cuda

// The plugin's file name, and its two exported symbols (C linkage, so dlsym finds them by name).
#define ATTNVIZ_CUDA_PLUGIN_FILE "libattnviz_cuda.so"
extern "C" {
// The id of the build that made the plugin: a hash of the headers that define the boundary
// (backend.h, config.h, error.h, this file), the compiler and the project version. The loader
// refuses a plugin whose id differs from its own before it touches PluginApi.
const char* attnviz_cuda_plugin_build_id();
const attnviz::cuda::PluginApi* attnviz_cuda_plugin_api();
}
