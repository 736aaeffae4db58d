// One allocation per run of the model, carved into its activations (llm.c's
// malloc_and_point_activations): every size is known before the first op, so a pass allocates
// once. A counting arena (no buffer) adds up what the carving would take.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/error.h"
#include "compute/backend.h"

namespace attnviz {

class Arena {
 public:
  // A fresh buffer of `bytes`.
  Arena(Backend& be, uint64_t bytes)
      : be_(&be), owned_(be.allocate(std::max<uint64_t>(bytes, 64))), buf_(owned_.get()) {}
  // Carves `reuse` (a workspace that lives across training steps).
  Arena(Backend& be, DeviceBuffer& reuse) : be_(&be), buf_(&reuse) {}
  // Counting: hands out null pointers and adds up what they would take.
  Arena() = default;
  // A buffer kept in `keep` across runs, grown when a run needs more than it holds, so that
  // training steps do not allocate and zero-fill their scratch again and again.
  static Arena reusing(Backend& be, BufferPtr& keep, uint64_t bytes) {
    if (!keep || keep->bytes() < bytes) keep = be.allocate(bytes + bytes / 4);
    return Arena(be, *keep);
  }

  float* floats(int64_t n) { return static_cast<float*>(take((uint64_t)n * sizeof(float))); }
  int32_t* ints(int64_t n) { return static_cast<int32_t*>(take((uint64_t)n * sizeof(int32_t))); }
  uint8_t* bytes(int64_t n) { return static_cast<uint8_t*>(take((uint64_t)n)); }
  uint64_t used() const { return used_; }
  // Copies host data into an arena region.
  template <class T>
  void put(T* dst, const std::vector<T>& src) {
    if (!src.empty()) be_->upload(*buf_, src.data(), src.size() * sizeof(T), offset(dst));
  }
  // Copies an arena region to the host.
  void get(const void* src, void* dst, uint64_t bytes) {
    if (bytes) be_->download(*buf_, dst, bytes, offset(src));
  }
  // Bytes a run needs for these many floats and bytes (with alignment slack per region).
  static uint64_t size(uint64_t floats, uint64_t bytes, int regions) {
    return floats * sizeof(float) + bytes + (uint64_t)regions * 64;
  }

 private:
  void* take(uint64_t bytes) {
    used_ = (used_ + 63) / 64 * 64;
    if (!buf_) {
      used_ += bytes;
      return nullptr;
    }
    if (used_ + bytes > buf_->bytes())
      throw Error(ErrorKind::Backend, "internal error: the pass's arena is too small");
    void* p = buf_->u8() + used_;
    used_ += bytes;
    return p;
  }
  size_t offset(const void* p) const {
    return (size_t)(static_cast<const uint8_t*>(p) - static_cast<const uint8_t*>(buf_->data()));
  }
  Backend* be_ = nullptr;
  BufferPtr owned_;
  DeviceBuffer* buf_ = nullptr;
  uint64_t used_ = 0;
};

}  // namespace attnviz
