// The CPU backend: the reference implementation of every Backend op, on host memory. Matrix
// products run on OpenBLAS (single-threaded, its kernels chosen at run time for the CPU) or Eigen
// when built without it; the work is split over a pool of threads that sleep when they wait.
#pragma once

#include <cstdint>
#include <memory>

#include "compute/backend.h"

namespace attnviz {

// threads: how many threads the ops may use; 0 = one per core this process may use.
std::shared_ptr<Backend> makeCpuBackend(int threads = 0);

// C[M, N] = alpha · A[M, K] · B (B [K, N], or B [N, K] transposed when b_transposed), row-major
// with leading dimensions lda, ldb, ldc, on the calling thread: the product the CPU backend's ops
// use, for host code that computes from kept vectors (an attention block's tiles).
void hostGemm(bool b_transposed, int M, int N, int K, float alpha, const float* A, int64_t lda,
              const float* B, int64_t ldb, float* C, int64_t ldc);

// x[j] = e^(x[j] − ref) · scale for j < n: the pass's own exponential (the softmax's; ≤ 2 ulp of
// e^x, 0 below −87.3), vectorised for the CPU it runs on, for host code that computes
// probabilities from kept statistics (an attention block's tiles).
void hostScaledExp(float* x, int n, float ref, float scale);

}  // namespace attnviz
