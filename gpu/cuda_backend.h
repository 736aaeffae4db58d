// The CUDA + cuBLAS backend: every op of core/backend.h on an NVIDIA GPU under the same name.
// Plain C++ (no CUDA headers), included by backends.cpp only when ATTNVIZ_HAVE_CUDA.
#pragma once

#include <memory>
#include <string>

#include "backend.h"

namespace attnviz::cuda {

// Empty when device 0 can run this build's kernels now; otherwise why not, e.g.
// "no CUDA device found (cudaGetDeviceCount: no CUDA-capable device is detected
// (cudaErrorNoDevice))" or "no NVIDIA driver is installed (...)". Never throws.
std::string deviceUnavailableReason();

// The backend on device 0 (CUDA_VISIBLE_DEVICES picks which GPU that is). Throws Error(Backend)
// when it cannot be created.
std::shared_ptr<Backend> makeCudaBackend();

}  // namespace attnviz::cuda
