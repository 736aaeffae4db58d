#include "base/host_memory.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#ifdef __unix__
#include <unistd.h>
#endif
#if defined(__linux__) && !defined(__SANITIZE_ADDRESS__)
#include <sys/mman.h>
#define ATTNVIZ_HUGE_PAGES 1
#endif

namespace attnviz {

namespace {

constexpr std::size_t kAlign = 64;

#ifdef ATTNVIZ_HUGE_PAGES
constexpr std::size_t kHuge = std::size_t(2) << 20;
// Freed large buffers kept for the next ones of the same size, up to keepBytes() in all: a fresh
// mapping is zeroed by the kernel when first written (about 45 ms for the 360 MB a 512-token pass
// of the tutorial's model allocates, 10 % of the pass on two threads); a kept one is not. Under a
// hypervisor that takes back the guest's free memory, a fresh huge page costs far more: 0.5–0.6
// GB/s on the development VM against 11 GB/s for one just freed, so a 1024-token pass of GPT-2
// small (1.4 GB of trace and logits) spent a third of its time in the kernel's page zeroing while
// it could keep only 512 MiB of the previous pass. An eighth of the physical memory, between 512
// MiB and 4 GiB, holds a 1024-token trace of a 12- or 30-layer model on a 16 GB machine; what is
// kept never raises a run's peak (a fresh mapping replaces kept buffers), only what an idle process
// holds.
std::size_t keepBytes() {
  static const std::size_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const std::size_t eighth =
        pages > 0 && page > 0 ? (std::size_t)pages / 8 * (std::size_t)page : 0;
    return std::clamp(eighth, std::size_t(512) << 20, std::size_t(4) << 30);
  }();
  return bytes;
}

std::size_t roundUp(std::size_t n, std::size_t to) {
  return (n + to - 1) / to * to;
}

struct Kept {
  std::mutex mutex;
  std::vector<std::pair<void*, std::size_t>> buffers;  // oldest first
  std::size_t bytes = 0;
  std::unordered_map<void*, std::size_t> mapped;  // every large buffer in use: its mapping's size
};

Kept& kept() {
  static Kept* k = new Kept;  // never destroyed: buffers may be freed during static destruction
  return *k;
}

void* mapHuge(std::size_t size) {
  // Map one huge page more than needed, then unmap the unaligned head and the tail.
  void* raw =
      mmap(nullptr, size + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto start = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = roundUp(start, kHuge);
  if (aligned > start) munmap(raw, aligned - start);
  const std::size_t tail = start + size + kHuge - (aligned + size);
  if (tail) munmap(reinterpret_cast<void*>(aligned + size), tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, size, MADV_HUGEPAGE);  // advice only: without huge pages it works as before
  return p;
}
#endif

}  // namespace

void* allocateHost(std::size_t bytes) noexcept {
  if (bytes == 0) bytes = 1;
#ifdef ATTNVIZ_HUGE_PAGES
  if (bytes >= kHuge) {
    if (bytes > SIZE_MAX - 2 * kHuge) return nullptr;
    const std::size_t size = roundUp(bytes, kHuge);
    Kept& k = kept();
    void* p = nullptr;
    std::size_t got = 0;
    {  // nothing under the lock allocates (erase does not): no exception can leave noexcept
      std::lock_guard<std::mutex> lock(k.mutex);
      // The smallest kept buffer that holds it without wasting more than half its size again
      // (the newest of equals): the decoder's arena serves the encoder's of the next pass.
      auto best = k.buffers.end();
      for (auto it = k.buffers.begin(); it != k.buffers.end(); ++it)
        if (it->second >= size && it->second <= size + size / 2 &&
            (best == k.buffers.end() || it->second <= best->second))
          best = it;
      if (best != k.buffers.end()) {
        p = best->first;
        got = best->second;
        k.bytes -= got;
        k.buffers.erase(best);
      } else {
        // None fits: the new mapping takes the place of kept ones (the oldest first), so that
        // keeping never adds to a run's peak more than what one allocation replaces.
        std::size_t freed = 0, evict = 0;
        while (evict < k.buffers.size() && freed < size) {
          munmap(k.buffers[evict].first, k.buffers[evict].second);
          freed += k.buffers[evict++].second;
        }
        k.buffers.erase(k.buffers.begin(), k.buffers.begin() + (std::ptrdiff_t)evict);
        k.bytes -= freed;
      }
    }
    if (!p) {
      p = mapHuge(size);
      got = size;
    }
    if (!p) return nullptr;
    try {
      std::lock_guard<std::mutex> lock(k.mutex);
      k.mapped[p] = got;
    } catch (...) {  // no memory for the note: give the buffer back
      munmap(p, got);
      return nullptr;
    }
    return p;
  }
#endif
  return ::operator new(bytes, std::align_val_t(kAlign), std::nothrow);
}

void freeHost(void* p, std::size_t bytes) noexcept {
  if (!p) return;
  if (bytes == 0) bytes = 1;
#ifdef ATTNVIZ_HUGE_PAGES
  if (bytes >= kHuge) {
    Kept& k = kept();
    std::lock_guard<std::mutex> lock(k.mutex);
    const auto at = k.mapped.find(p);
    const std::size_t size = at == k.mapped.end() ? roundUp(bytes, kHuge) : at->second;
    if (at != k.mapped.end()) k.mapped.erase(at);
    if (size > keepBytes()) {
      munmap(p, size);
      return;
    }
    std::size_t evict = 0;
    while (k.bytes + size > keepBytes()) {
      munmap(k.buffers[evict].first, k.buffers[evict].second);
      k.bytes -= k.buffers[evict++].second;
    }
    k.buffers.erase(k.buffers.begin(), k.buffers.begin() + (std::ptrdiff_t)evict);
    try {
      k.buffers.emplace_back(p, size);  // may allocate: then the buffer is not kept
      k.bytes += size;
    } catch (...) {
      munmap(p, size);
    }
    return;
  }
#endif
  ::operator delete(p, std::align_val_t(kAlign));
}

void releaseKeptHostMemory() noexcept {
#ifdef ATTNVIZ_HUGE_PAGES
  Kept& k = kept();
  std::vector<std::pair<void*, std::size_t>> drop;
  {
    std::lock_guard<std::mutex> lock(k.mutex);
    drop.swap(k.buffers);
    k.bytes = 0;
  }
  for (const auto& [q, n] : drop) munmap(q, n);
#endif
}

unsigned long long availableHostBytes() noexcept {
  unsigned long long bytes = 0;
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::strncmp(line, "MemAvailable:", 13) == 0) {
        bytes = std::strtoull(line + 13, nullptr, 10) * 1024;  // the file counts in kB
        break;
      }
    std::fclose(f);
  }
  if (bytes == 0) return 0;
#ifdef ATTNVIZ_HUGE_PAGES
  Kept& k = kept();
  std::lock_guard<std::mutex> lock(k.mutex);
  bytes += k.bytes;
#endif
  return bytes;
}

unsigned long long physicalHostBytes() noexcept {
#ifdef __unix__
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return (unsigned long long)pages * (unsigned long long)page;
#endif
  return 0;
}

bool hostMemoryKeepsBuffers() noexcept {
#ifdef ATTNVIZ_HUGE_PAGES
  return true;
#else
  return false;
#endif
}

}  // namespace attnviz
