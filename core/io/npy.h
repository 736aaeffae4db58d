// Writing NumPy .npy files (format 1.0): whole arrays, or a preamble that a writer streaming an
// array row by row puts first (model/trace_dump.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/tensor.h"

namespace attnviz {

void writeNpy(const std::string& path, const float* data, const Shape& shape);
void writeNpy(const std::string& path, const uint8_t* data, const Shape& shape);

// The .npy 1.0 preamble of an array of `shape` with NumPy type `descr` ("<f4", "|u1"): magic,
// version and header, padded so that the data starts at a multiple of 64 bytes.
std::string npyPreamble(const char* descr, const Shape& shape);

}  // namespace attnviz
