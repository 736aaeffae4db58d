// CudaBuffer: a block of CUDA device memory implementing attnviz::DeviceBuffer. RAII and
// move-only; the destructor frees it and never throws (after tiny-cuda-nn's GPUMemory).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "backend.h"

namespace attnviz::cuda {

// The backend's stream, shared by the backend and every buffer it made: a buffer may outlive the
// backend and still frees itself in stream order.
using StreamPtr = std::shared_ptr<CUstream_st>;

// A new non-blocking stream, destroyed with its last owner. Throws Error(Backend).
StreamPtr makeStream();

class CudaBuffer final : public DeviceBuffer {
 public:
  // `bytes` bytes of device memory, zero-filled in the order of `stream`. With `pooled`, the
  // memory comes from the device's stream-ordered pool (cudaMallocAsync / cudaFreeAsync), so the
  // many short-lived activation buffers of a forward pass neither hit the driver nor make a free
  // wait for the whole device; otherwise cudaMalloc / cudaFree. Throws Error(Backend) naming the
  // size and the free/total device memory when the device is out of memory.
  CudaBuffer(size_t bytes, StreamPtr stream, bool pooled);
  ~CudaBuffer() override;

  CudaBuffer(CudaBuffer&& other) noexcept;
  CudaBuffer& operator=(CudaBuffer&& other) noexcept;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  size_t bytes() const override { return bytes_; }
  void* data() override { return ptr_; }
  const void* data() const override { return ptr_; }

 private:
  void release() noexcept;

  void* ptr_ = nullptr;  // device memory; nullptr for an empty buffer
  size_t bytes_ = 0;
  StreamPtr stream_;
  bool pooled_ = false;
};

}  // namespace attnviz::cuda
