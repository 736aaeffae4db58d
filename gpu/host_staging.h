// HostStaging: uploads from host memory that the caller may overwrite or free as soon as upload()
// returns (a stack variable, a temporary vector), without waiting for the GPU. The bytes are
// copied into a small ring of pinned (page-locked) blocks and DMA'd from there in stream order;
// a block is reused once the event recorded after its last copy has completed. CUDA's
// cudaMemcpyAsync from pageable memory makes no such promise in its documentation.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

namespace attnviz::cuda {

class HostStaging {
 public:
  HostStaging() = default;  // the pinned blocks are allocated at the first upload
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // Queues the copy of `bytes` bytes from host `src` to device `dst` on `stream` and returns once
  // `src` has been read. Where pinned memory cannot be had, copies and waits for the stream
  // instead. Throws CudaError.
  void upload(void* dst, const void* src, size_t bytes, cudaStream_t stream);

  static constexpr size_t kBlockBytes = size_t{4} << 20;  // 4 MiB: a weight matrix in a few steps
  static constexpr int kBlocks = 4;                       // copies in flight at once

 private:
  struct Block {
    void* host = nullptr;        // kBlockBytes of pinned memory
    cudaEvent_t done = nullptr;  // recorded after the last copy out of `host`
  };
  bool ready();  // allocates the blocks once; false when pinned memory is unavailable

  std::vector<Block> blocks_;
  size_t next_ = 0;
  bool tried_ = false;
};

}  // namespace attnviz::cuda
