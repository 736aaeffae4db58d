// CudaBuffer: a block of CUDA device memory implementing attnviz::DeviceBuffer, taken from the
// backend's own stream-ordered memory pool. RAII and move-only; the destructor frees it and never
// throws (after tiny-cuda-nn's GPUMemory).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>

#include "compute/backend.h"

namespace attnviz::cuda {

// The backend's stream, shared by the backend and every buffer it made: a buffer may outlive the
// backend and still frees itself in stream order.
using StreamPtr = std::shared_ptr<CUstream_st>;

// A new non-blocking stream, destroyed with its last owner. Throws CudaError.
StreamPtr makeStream();

// The backend's private memory pool (cudaMemPoolCreate) on `device`, shared like the stream and
// destroyed with its last owner, which gives all its memory back to the driver. At each
// synchronisation the pool returns what it caches beyond `keep_bytes`, so one large trace does
// not pin its peak for the rest of the process. nullptr when the device has no memory pools
// (buffers then use cudaMalloc / cudaFree). Throws CudaError.
using PoolPtr = std::shared_ptr<CUmemPoolHandle_st>;
PoolPtr makePool(int device, size_t keep_bytes);

// Device memory the pool holds (reserved) and of that, hands out to live buffers (used).
struct PoolUsage {
  size_t reserved = 0, used = 0;
};
PoolUsage poolUsage(cudaMemPool_t pool) noexcept;

class CudaBuffer final : public DeviceBuffer {
 public:
  // `bytes` bytes of device memory on `device`, zero-filled in the order of `stream` (unless
  // `zero_fill` is false). From `pool` (cudaMallocFromPoolAsync / cudaFreeAsync), so the many
  // short-lived activation buffers of a forward pass neither hit the driver nor make a free wait
  // for the whole device; with no pool, cudaMalloc / cudaFree. When the device is out of memory,
  // waits for the stream, gives the pool's cache back and tries once more; then throws
  // CudaError(cudaErrorMemoryAllocation) naming the size, the free and total device memory and
  // what the pool holds.
  CudaBuffer(size_t bytes, StreamPtr stream, PoolPtr pool, int device, bool zero_fill = true);
  ~CudaBuffer() override;

  CudaBuffer(CudaBuffer&& other) noexcept;
  CudaBuffer& operator=(CudaBuffer&& other) noexcept;
  CudaBuffer(const CudaBuffer&) = delete;
  CudaBuffer& operator=(const CudaBuffer&) = delete;

  size_t bytes() const override { return bytes_; }
  void* data() override { return ptr_; }
  const void* data() const override { return ptr_; }

 private:
  cudaError_t tryAllocate() noexcept;
  void release() noexcept;

  void* ptr_ = nullptr;  // device memory; nullptr for an empty buffer
  size_t bytes_ = 0;
  StreamPtr stream_;
  PoolPtr pool_;
  int device_ = 0;
};

}  // namespace attnviz::cuda
