// The CPU backend: the reference implementation of every Backend op, on host memory, with Eigen
// for the matrix products (and OpenMP threads when available).
#pragma once

#include <memory>

#include "backend.h"

namespace attnviz {

std::shared_ptr<Backend> makeCpuBackend();

}  // namespace attnviz
