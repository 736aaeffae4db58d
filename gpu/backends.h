// Choosing a compute backend at run time: the CPU always, CUDA when it was compiled in and a
// device is present. Plain C++ (no CUDA headers), so the app and CLI include it everywhere.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend.h"

namespace attnviz {

// True when this build contains the CUDA backend.
bool cudaCompiledIn();
// Empty when a CUDA device can be used now; otherwise why not ("built without CUDA",
// "no CUDA device found (cudaGetDeviceCount: ...)", "driver too old ...").
std::string cudaUnavailableReason();

// "cpu" or "cuda". Throws Error(Backend) with the reason when the backend cannot be created.
std::shared_ptr<Backend> createBackend(const std::string& name);

// Like createBackend, but falls back to the CPU when the preferred backend is unavailable;
// `message` then says why (empty when the preferred backend was created).
struct BackendChoice {
  std::shared_ptr<Backend> backend;
  std::string message;
};
BackendChoice createBackendOrFallback(const std::string& preferred);

}  // namespace attnviz
