// Choosing a compute backend at run time: the CPU always, CUDA when it was compiled in, its plugin
// (libattnviz_cuda.so, core/compute/cuda_plugin.h) loads and a device is present. Plain C++ (no
// CUDA headers or libraries), so the app and CLI include it everywhere and start without CUDA.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compute/backend.h"

namespace attnviz {

// True when this build contains the CUDA backend.
bool cudaCompiledIn();
// Empty when a CUDA device can be used now; otherwise why not ("built without CUDA", "the CUDA
// plugin ... was not found", "cannot load the CUDA plugin ...: libcublas.so.13: cannot open
// shared object file ...", "no CUDA device found (cudaGetDeviceCount: ...)", "driver too old
// ..."). The first call loads the plugin and creates the device's CUDA context.
std::string cudaUnavailableReason();

// The file the CUDA plugin was loaded from; empty when it was not (cudaUnavailableReason says
// why). $ATTNVIZ_CUDA_PLUGIN names the file to load instead of searching
// (core/compute/cuda_plugin_loader.h).
std::string cudaPluginPath();

// "cpu" or "cuda". Throws Error(Backend) with the reason when the backend cannot be created.
std::shared_ptr<Backend> createBackend(const std::string& name);

// A backend whose failure() is not empty (a lost CUDA context) stays unusable: drop it and
// create the CPU backend (core/compute/backend.h).

// Like createBackend, but falls back to the CPU when the preferred backend is unavailable;
// `message` then says why (empty when the preferred backend was created).
struct BackendChoice {
  std::shared_ptr<Backend> backend;
  std::string message;
};
BackendChoice createBackendOrFallback(const std::string& preferred);

}  // namespace attnviz
