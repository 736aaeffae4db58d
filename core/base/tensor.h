// Host tensors: row-major float32 (weights, activations, trace) and uint8 (masks), with their
// shape.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace attnviz {

using Shape = std::vector<int64_t>;

inline int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string shapeToString(const Shape& shape);  // "[64, 512]"

// A row-major float32 tensor on the host.
struct Tensor {
  Shape shape;
  std::vector<float> data;

  Tensor() = default;
  explicit Tensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(numel(shape)), 0.0f) {}
  Tensor(Shape s, std::vector<float> d) : shape(std::move(s)), data(std::move(d)) {}
  bool empty() const { return data.empty(); }
  int64_t size() const { return static_cast<int64_t>(data.size()); }
  int64_t dim(int i) const { return shape.at(static_cast<size_t>(i)); }
  float* ptr() { return data.data(); }
  const float* ptr() const { return data.data(); }
};

// A row-major uint8 tensor on the host (masks: 1 = masked).
struct ByteTensor {
  Shape shape;
  std::vector<uint8_t> data;

  ByteTensor() = default;
  explicit ByteTensor(Shape s) : shape(std::move(s)), data(static_cast<size_t>(numel(shape)), 0) {}
  bool empty() const { return data.empty(); }
};

}  // namespace attnviz
