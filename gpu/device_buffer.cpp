#include "device_buffer.h"

#include <string>
#include <utility>

#include "cuda_check.h"
#include "cuda_status.h"

namespace attnviz::cuda {

namespace {

[[noreturn]] void throwOutOfMemory(size_t bytes, cudaMemPool_t pool, size_t released) {
  (void)cudaGetLastError();
  MemoryFacts facts;
  facts.known = cudaMemGetInfo(&facts.free_bytes, &facts.total_bytes) == cudaSuccess;
  if (pool) {
    const PoolUsage usage = poolUsage(pool);
    facts.pooled = true;
    facts.pool_reserved = usage.reserved;
    facts.pool_used = usage.used;
    facts.released = released;
  }
  (void)cudaGetLastError();
  throw CudaError(cudaErrorMemoryAllocation, outOfMemoryMessage(bytes, facts));
}

// Sets the calling thread's device to `device` (a no-op when it is already); errors ignored.
void selectDevice(int device) noexcept {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device) (void)cudaSetDevice(device);
}

}  // namespace

StreamPtr makeStream() {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return StreamPtr(stream, [](cudaStream_t s) { (void)cudaStreamDestroy(s); });
}

PoolPtr makePool(int device, size_t keep_bytes) {
  int supported = 0;
  CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
  if (!supported) return nullptr;
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  CUDA_CHECK(cudaMemPoolCreate(&pool, &props));
  // cudaMemPoolDestroy with allocations still out returns at once; the pool goes once they are
  // freed. Errors at exit (the runtime unloading) cannot be reported from a deleter.
  PoolPtr owner(pool, [](cudaMemPool_t p) { (void)cudaMemPoolDestroy(p); });
  uint64_t keep = keep_bytes;
  CUDA_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
  return owner;
}

PoolUsage poolUsage(cudaMemPool_t pool) noexcept {
  uint64_t reserved = 0, used = 0;
  if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved) != cudaSuccess ||
      cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used) != cudaSuccess)
    (void)cudaGetLastError();
  return {static_cast<size_t>(reserved), static_cast<size_t>(used)};
}

CudaBuffer::CudaBuffer(size_t bytes, StreamPtr stream, PoolPtr pool, int device, bool zero_fill)
    : bytes_(bytes), stream_(std::move(stream)), pool_(std::move(pool)), device_(device) {
  if (bytes == 0) return;
  cudaError_t error = tryAllocate();
  if (error == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    size_t released = 0;
    if (pool_) {
      // Blocks freed in stream order come back to the pool once the stream reaches the frees;
      // then everything the pool caches goes back to the driver, for this allocation and for
      // other processes.
      CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
      const size_t before = poolUsage(pool_.get()).reserved;
      CUDA_CHECK(cudaMemPoolTrimTo(pool_.get(), 0));
      const size_t after = poolUsage(pool_.get()).reserved;
      released = before > after ? before - after : 0;
      error = tryAllocate();
    }
    if (error == cudaErrorMemoryAllocation) throwOutOfMemory(bytes, pool_.get(), released);
  }
  CUDA_CHECK(error);
  if (zero_fill) {
    try {
      CUDA_CHECK(cudaMemsetAsync(ptr_, 0, bytes, stream_.get()));
    } catch (...) {
      release();
      throw;
    }
  }
}

cudaError_t CudaBuffer::tryAllocate() noexcept {
  const cudaError_t error = pool_
                                ? cudaMallocFromPoolAsync(&ptr_, bytes_, pool_.get(), stream_.get())
                                : cudaMalloc(&ptr_, bytes_);
  if (error != cudaSuccess) ptr_ = nullptr;
  return error;
}

CudaBuffer::~CudaBuffer() {
  release();
}

CudaBuffer::CudaBuffer(CudaBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      stream_(std::move(other.stream_)),
      pool_(std::move(other.pool_)),
      device_(other.device_) {}

CudaBuffer& CudaBuffer::operator=(CudaBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = std::move(other.stream_);
    pool_ = std::move(other.pool_);
    device_ = other.device_;
  }
  return *this;
}

void CudaBuffer::release() noexcept {
  if (ptr_) {
    // Pooled: returned to the pool once the work queued before it on the stream is done.
    // Otherwise cudaFree waits for the device. A buffer may be dropped on any thread, so the
    // device is set first. An error here (a context broken by an earlier fault, the runtime
    // unloading at exit) cannot be reported from a destructor; the next checked call reports a
    // broken context.
    selectDevice(device_);
    if (pool_)
      (void)cudaFreeAsync(ptr_, stream_.get());
    else
      (void)cudaFree(ptr_);
    (void)cudaGetLastError();
    ptr_ = nullptr;
  }
  bytes_ = 0;
}

}  // namespace attnviz::cuda
