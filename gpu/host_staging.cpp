#include "host_staging.h"

#include <algorithm>
#include <cstring>

#include "cuda_check.h"

namespace attnviz::cuda {

HostStaging::~HostStaging() {
  for (Block& b : blocks_) {
    // A copy out of the block may still be in flight; errors (a lost context, the runtime
    // unloading at exit) cannot be reported from a destructor.
    if (b.done) {
      (void)cudaEventSynchronize(b.done);
      (void)cudaEventDestroy(b.done);
    }
    if (b.host) (void)cudaFreeHost(b.host);
  }
  (void)cudaGetLastError();
}

bool HostStaging::ready() {
  if (tried_) return !blocks_.empty();
  tried_ = true;
  for (int i = 0; i < kBlocks; ++i) {
    Block b;
    if (cudaMallocHost(&b.host, kBlockBytes) != cudaSuccess) break;
    if (cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming) != cudaSuccess) {
      (void)cudaFreeHost(b.host);
      break;
    }
    blocks_.push_back(b);
  }
  (void)cudaGetLastError();  // a refused pinned allocation is not an error of the next call
  return !blocks_.empty();
}

void HostStaging::upload(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  if (!ready()) {
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  const char* from = static_cast<const char*>(src);
  char* to = static_cast<char*>(dst);
  for (size_t done = 0; done < bytes;) {
    Block& b = blocks_[next_];
    next_ = (next_ + 1) % blocks_.size();
    const size_t n = std::min(kBlockBytes, bytes - done);
    CUDA_CHECK(cudaEventSynchronize(b.done));  // the block's previous copy has left it
    std::memcpy(b.host, from + done, n);
    CUDA_CHECK(cudaMemcpyAsync(to + done, b.host, n, cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(cudaEventRecord(b.done, stream));
    done += n;
  }
}

}  // namespace attnviz::cuda
