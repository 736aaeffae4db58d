// Host memory for the large buffers of a pass and its trace: 64-byte aligned; from 2 MiB up (on
// Linux, outside AddressSanitizer builds) mapped on its own, 2 MiB-aligned and advised for
// transparent huge pages, so that writing a fresh 8 MiB block of probabilities takes four page
// faults instead of 2048. Freed large buffers are kept, up to an eighth of the physical memory in
// all (at least 512 MiB, at most 4 GiB; the oldest unmapped first), for the next allocations of the
// same size: the next pass over the same lengths writes
// into memory the kernel does not have to zero again. HostVector's elements are left uninitialised
// by resize() and the size constructor (assign() and value arguments still fill): a buffer the pass
// overwrites whole is not zero-filled first.
#pragma once

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace attnviz {

// nullptr when the system has no memory for it.
void* allocateHost(std::size_t bytes) noexcept;
void freeHost(void* p, std::size_t bytes) noexcept;
// Gives the kept buffers back to the system.
void releaseKeptHostMemory() noexcept;
// The memory a pass may still take: the system's MemAvailable (Linux's /proc/meminfo) and the
// freed buffers this process keeps for reuse; 0 where the system does not say.
unsigned long long availableHostBytes() noexcept;
// The machine's physical memory; 0 where the system does not say.
unsigned long long physicalHostBytes() noexcept;
// Whether large buffers are mapped on their own and kept (Linux, not under AddressSanitizer,
// which watches operator new's blocks instead).
bool hostMemoryKeepsBuffers() noexcept;

template <class T>
struct HostAllocator {
  using value_type = T;
  HostAllocator() = default;
  template <class U>
  HostAllocator(const HostAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) {
    if (n > (std::size_t)-1 / sizeof(T)) throw std::bad_array_new_length();
    void* p = allocateHost(n * sizeof(T));
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept { freeHost(p, n * sizeof(T)); }
  // Default-initialisation: no zero-fill for the arithmetic types the buffers hold.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  friend bool operator==(const HostAllocator&, const HostAllocator&) { return true; }
};

template <class T>
using HostVector = std::vector<T, HostAllocator<T>>;

}  // namespace attnviz
