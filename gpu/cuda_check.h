// CUDA_CHECK / CUBLAS_CHECK: turn a failed CUDA runtime or cuBLAS call into an attnviz::Error
// (ErrorKind::Backend) carrying file, line, the call and the library's error string.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

namespace attnviz::cuda {

// Throw Error(Backend, "gpu/file.cpp:42: cudaMalloc(...) failed: out of memory
// (cudaErrorMemoryAllocation)"). throwCudaError also clears the runtime's last error, so a
// recoverable failure (out of memory) does not resurface at the next kernel launch check.
[[noreturn]] void throwCudaError(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throwCublasError(cublasStatus_t status, const char* call, const char* file,
                                   int line);

}  // namespace attnviz::cuda

#define CUDA_CHECK(call)                                                               \
  do {                                                                                 \
    const cudaError_t attnviz_cuda_error_ = (call);                                    \
    if (attnviz_cuda_error_ != cudaSuccess)                                            \
      ::attnviz::cuda::throwCudaError(attnviz_cuda_error_, #call, __FILE__, __LINE__); \
  } while (0)

#define CUBLAS_CHECK(call)                                                                  \
  do {                                                                                      \
    const cublasStatus_t attnviz_cublas_status_ = (call);                                   \
    if (attnviz_cublas_status_ != CUBLAS_STATUS_SUCCESS)                                    \
      ::attnviz::cuda::throwCublasError(attnviz_cublas_status_, #call, __FILE__, __LINE__); \
  } while (0)
