// The CUDA + cuBLAS backend: every op of core/compute/backend.h on an NVIDIA GPU under the same
// name. Compiled into the CUDA plugin only (cuda_plugin.cpp hands these two functions to the
// loader); plain C++ (no CUDA headers).
//
// Environment: ATTNVIZ_CUDA_SYNC=1 makes the backend wait for the GPU after every op, so that an
// error names the op that caused it (slow; for debugging).
#pragma once

#include <memory>
#include <string>

#include "compute/backend.h"

namespace attnviz::cuda {

// Empty when device 0 can run this build's kernels now; otherwise why not, e.g.
// "no CUDA device found (cudaGetDeviceCount: no CUDA-capable device is detected
// (cudaErrorNoDevice))" or "no NVIDIA driver is installed (...)". Creates the device's CUDA
// context. Never throws.
std::string deviceUnavailableReason();

// The backend on device 0 (CUDA_VISIBLE_DEVICES picks which GPU that is). Throws Error(Backend)
// when it cannot be created.
std::shared_ptr<Backend> makeCudaBackend();

}  // namespace attnviz::cuda
