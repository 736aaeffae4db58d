// A counter-based random number: a hash of (seed, index), the same on the host and on a GPU, so a
// dropout mask is a pure function of its seed and needs no storage (the backward recomputes it)
// and every backend draws the very same mask. SplitMix64's finaliser (Steele, Lea, Flood 2014).
// Plain C++; __host__ __device__ when compiled by nvcc (gpu/kernel_math.h includes it).
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define ATTNVIZ_RNG_HOST_DEVICE __host__ __device__
#else
#define ATTNVIZ_RNG_HOST_DEVICE
#endif

namespace attnviz {

// 32 well-mixed bits of (seed, i).
ATTNVIZ_RNG_HOST_DEVICE inline uint32_t counterHash(uint64_t seed, uint64_t i) {
  uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<uint32_t>(z >> 32);
}

// The hash value below which an element is dropped: p · 2³² (p in [0, 1]).
ATTNVIZ_RNG_HOST_DEVICE inline uint32_t dropoutThreshold(float p) {
  if (p <= 0.0f) return 0u;
  if (p >= 1.0f) return 0xFFFFFFFFu;
  return static_cast<uint32_t>(static_cast<double>(p) * 4294967296.0);
}

// Whether element i survives dropout with drop probability p (threshold = dropoutThreshold(p)).
ATTNVIZ_RNG_HOST_DEVICE inline bool dropoutKeep(uint64_t seed, uint64_t i, uint32_t threshold) {
  return counterHash(seed, i) >= threshold;
}

}  // namespace attnviz
