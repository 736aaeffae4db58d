// The CPU backend: the reference implementation of every Backend op, on host memory. Matrix
// products run on OpenBLAS (single-threaded, its kernels chosen at run time for the CPU) or Eigen
// when built without it; the work is split over a pool of threads that sleep when they wait.
#pragma once

#include <memory>

#include "compute/backend.h"

namespace attnviz {

// threads: how many threads the ops may use; 0 = one per core this process may use.
std::shared_ptr<Backend> makeCpuBackend(int threads = 0);

}  // namespace attnviz
