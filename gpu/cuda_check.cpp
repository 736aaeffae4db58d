#include "cuda_check.h"

#include <string>

namespace attnviz::cuda {

namespace {

// "gpu/cuda_backend.cpp" out of whatever path the compiler put in __FILE__.
std::string sourceName(const char* file) {
  std::string path(file);
  size_t at = path.rfind("/gpu/");
  if (at != std::string::npos) return path.substr(at + 1);
  at = path.find_last_of('/');
  return at == std::string::npos ? path : path.substr(at + 1);
}

}  // namespace

std::string errorText(cudaError_t error) {
  return std::string(cudaGetErrorString(error)) + " (" + cudaGetErrorName(error) + ")";
}

void throwCudaError(cudaError_t error, const char* call, const char* file, int line) {
  (void)cudaGetLastError();  // reset the non-sticky error state
  throw CudaError(error, sourceName(file) + ":" + std::to_string(line) + ": " + call +
                             " failed: " + errorText(error));
}

void throwCublasError(cublasStatus_t status, const char* call, const char* file, int line) {
  // cuBLAS could not allocate its workspace: out of GPU memory, as a failed cudaMalloc.
  const cudaError_t code =
      status == CUBLAS_STATUS_ALLOC_FAILED ? cudaErrorMemoryAllocation : cudaSuccess;
  throw CudaError(code, sourceName(file) + ":" + std::to_string(line) + ": " + call +
                            " failed: " + cublasGetStatusString(status) + " (" +
                            cublasGetStatusName(status) + ")");
}

}  // namespace attnviz::cuda
