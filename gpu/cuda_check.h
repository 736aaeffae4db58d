// CUDA_CHECK / CUBLAS_CHECK: turn a failed CUDA runtime or cuBLAS call into a CudaError (an
// attnviz::Error of kind Backend) carrying file, line, the call, the library's error string and
// the CUDA error code, so that the backend can tell a lost context from a recoverable failure.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

#include "base/error.h"

namespace attnviz::cuda {

class CudaError : public Error {
 public:
  // `code`: the CUDA runtime error; for a cuBLAS failure cudaErrorMemoryAllocation when cuBLAS
  // could not allocate (CUBLAS_STATUS_ALLOC_FAILED), otherwise cudaSuccess.
  CudaError(cudaError_t code, const std::string& message)
      : Error(ErrorKind::Backend, message), code_(code) {}
  cudaError_t code() const { return code_; }

 private:
  cudaError_t code_;
};

// "out of memory (cudaErrorMemoryAllocation)".
std::string errorText(cudaError_t error);

// Throw CudaError("gpu/file.cpp:42: cudaMalloc(...) failed: out of memory
// (cudaErrorMemoryAllocation)"). throwCudaError also clears the runtime's last error, so a
// recoverable failure (out of memory) does not resurface at the next kernel launch check; a sticky
// error stays (CUDA keeps reporting it).
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
