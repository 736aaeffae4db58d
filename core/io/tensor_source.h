// A file of named tensors, whatever its format (a safetensors file, a PyTorch checkpoint): names,
// dtypes and shapes up front, values converted to float32 on demand. What the weight loader reads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/tensor.h"

namespace attnviz {

enum class DType {
  F64,
  F32,
  F16,
  BF16,
  I64,
  I32,
  I16,
  I8,
  U8,
  U16,
  U32,
  U64,
  BOOL,
  F8_E4M3,
  F8_E5M2
};

// The size of a regular file; Error(Io) naming the path when it is missing or not a regular file
// (a directory or a device would report a meaningless size).
uint64_t regularFileSize(const std::string& path);

const char* dtypeName(DType t);  // safetensors spelling: "F32", "BF16", ...
int dtypeSize(DType t);          // bytes per element
bool isFloatDType(DType t);      // F64, F32, F16 or BF16: what weights may be stored as

// Converts n values of a float dtype stored at p (any alignment, little-endian) to float32.
// Returns false, writing nothing, when t is not a float dtype.
bool convertToFloat(const uint8_t* p, DType t, size_t n, float* out);

struct TensorInfo {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0;  // where the values lie in the source (its own meaning per format)
  uint64_t end = 0;
};

class TensorSource {
 public:
  virtual ~TensorSource() = default;

  virtual const std::string& path() const = 0;
  // "safetensors", "PyTorch checkpoint (zip)", ...: for messages.
  virtual std::string formatName() const = 0;
  virtual const std::vector<TensorInfo>& tensors() const = 0;
  virtual const TensorInfo* find(const std::string& name) const = 0;
  bool contains(const std::string& name) const { return find(name) != nullptr; }

  // The values of a float tensor as float32. Throws Error(UnsupportedDtype) for other dtypes.
  virtual Tensor toFloat(const TensorInfo& info) const = 0;
  // The same by name; Error(MissingTensor) when absent.
  Tensor toFloat(const std::string& name) const;

  // Strings stored beside the tensors (safetensors' __metadata__); empty where a format has none.
  virtual const std::map<std::string, std::string>& metadata() const;
  // What a checkpoint dict holds beside the tensors ({"model_args": {"n_head": 6, …}, "iter_num":
  // 5000, …}) as JSON: None → null, bools, ints, floats (NaN kept), strings; dicts with string keys
  // one level down; anything else → {"python": "a tensor"} (what it is, for messages). An empty
  // object where a format has none.
  virtual const nlohmann::json& arguments() const;
};

}  // namespace attnviz
