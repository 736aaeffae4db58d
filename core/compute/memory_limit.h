// A backend that runs out of memory on purpose: it forwards everything to another backend, counts
// the bytes of the buffers it handed out that are still alive, and refuses an allocation that would
// take them past a limit with Error(OutOfMemory), as a GPU that runs out of memory does — or, with
// `lose_device` set, fails there as a GPU whose context is lost does: Error(Backend), failure() set
// for good, every later allocation refused (a pass allocates before its first op). For tests:
// the CPU fallback after running out of GPU memory (model/cpu_fallback.h) runs on a machine without
// a GPU (tests/test_cpu_fallback.cpp), and attnviz-cli takes the test hook
// ATTNVIZ_TEST_MEMORY_LIMIT=BYTES (docs/gpu.md).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "compute/backend.h"

namespace attnviz {

// The limit and what is counted against it; shared by the backend and its buffers (which may
// outlive it), and readable by a test while the backend runs.
struct MemoryLimit {
  explicit MemoryLimit(uint64_t bytes) : bytes(bytes) {}
  std::atomic<uint64_t> bytes;           // the limit (may be changed between requests)
  std::atomic<uint64_t> in_use{0};       // bytes of the live buffers handed out
  std::atomic<uint64_t> peak{0};         // the most in_use has been
  std::atomic<uint64_t> refused{0};      // allocations refused
  std::atomic<bool> lose_device{false};  // past the limit: a lost device, not out of memory
};

// `inner` limited to `limit->bytes` bytes of live buffers. Its name() is the inner backend's (a
// limited CUDA backend is still "cuda"); description() names the limit.
std::shared_ptr<Backend> limitMemory(std::shared_ptr<Backend> inner,
                                     std::shared_ptr<MemoryLimit> limit);
std::shared_ptr<Backend> limitMemory(std::shared_ptr<Backend> inner, uint64_t limit_bytes);

}  // namespace attnviz
