#include "device_buffer.h"

#include <string>
#include <utility>

#include "cuda_check.h"
#include "error.h"

namespace attnviz::cuda {

namespace {

std::string mebibytes(size_t bytes) {
  return std::to_string((bytes + (size_t{1} << 20) - 1) >> 20) + " MiB";
}

[[noreturn]] void throwOutOfMemory(size_t bytes) {
  (void)cudaGetLastError();
  size_t free_bytes = 0, total_bytes = 0;
  std::string memory;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
    memory = " (" + mebibytes(free_bytes) + " free of " + mebibytes(total_bytes) + ")";
  (void)cudaGetLastError();
  throw Error(ErrorKind::Backend,
              "out of GPU memory: cannot allocate " + mebibytes(bytes) + memory);
}

}  // namespace

StreamPtr makeStream() {
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  return StreamPtr(stream, [](cudaStream_t s) { (void)cudaStreamDestroy(s); });
}

CudaBuffer::CudaBuffer(size_t bytes, StreamPtr stream, bool pooled)
    : bytes_(bytes), stream_(std::move(stream)), pooled_(pooled) {
  if (bytes == 0) return;
  const cudaError_t error =
      pooled_ ? cudaMallocAsync(&ptr_, bytes, stream_.get()) : cudaMalloc(&ptr_, bytes);
  if (error == cudaErrorMemoryAllocation) {
    ptr_ = nullptr;
    throwOutOfMemory(bytes);
  }
  if (error != cudaSuccess) ptr_ = nullptr;
  CUDA_CHECK(error);
  try {
    CUDA_CHECK(cudaMemsetAsync(ptr_, 0, bytes, stream_.get()));
  } catch (...) {
    release();
    throw;
  }
}

CudaBuffer::~CudaBuffer() {
  release();
}

CudaBuffer::CudaBuffer(CudaBuffer&& other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      stream_(std::move(other.stream_)),
      pooled_(other.pooled_) {}

CudaBuffer& CudaBuffer::operator=(CudaBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    stream_ = std::move(other.stream_);
    pooled_ = other.pooled_;
  }
  return *this;
}

void CudaBuffer::release() noexcept {
  if (ptr_) {
    // Pooled: returned to the pool once the work queued before it on the stream is done.
    // Otherwise cudaFree waits for the device. An error here (a context broken by an earlier
    // fault, the runtime unloading at exit) cannot be reported from a destructor; the next checked
    // call reports a broken context.
    if (pooled_)
      (void)cudaFreeAsync(ptr_, stream_.get());
    else
      (void)cudaFree(ptr_);
    (void)cudaGetLastError();
    ptr_ = nullptr;
  }
  bytes_ = 0;
}

}  // namespace attnviz::cuda
