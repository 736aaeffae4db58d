// Reading safetensors files (https://github.com/huggingface/safetensors format): an 8-byte
// little-endian header length, a JSON header, then the tensor data. Validates everything a hostile
// file could get wrong (see docs/formats.md and tests/test_hostile.cpp) and never casts the buffer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/tensor.h"
#include "io/tensor_source.h"

namespace attnviz {

// TensorInfo::begin/end are byte offsets into the data buffer (after the header).
class SafetensorsFile : public TensorSource {
 public:
  static constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's cap

  // Reads and validates a whole file: the header length and the header first, the tensor data
  // only when they hold up. Throws Error with the kind of the first problem found.
  static SafetensorsFile open(const std::string& path);
  // Validates bytes already in memory; `what` names them in messages.
  static SafetensorsFile parse(std::vector<uint8_t> bytes, const std::string& what);

  const std::string& path() const override { return path_; }
  std::string formatName() const override { return "safetensors"; }
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  const TensorInfo* find(const std::string& name) const override;

  // Converts a float tensor (F32/F16/BF16/F64) to float32. Throws UnsupportedDtype otherwise.
  Tensor toFloat(const TensorInfo& info) const override;
  using TensorSource::toFloat;
  // Reads an integer or bool tensor (U8/BOOL/I8..I64) as uint8/int64 values.
  ByteTensor toBytes(const std::string& name) const;

  uint64_t dataBytes() const { return bytes_.size() - data_start_; }

 private:
  // Validates a header (the JSON text after the length) of a file of `size` bytes whose data
  // starts at `data_start`: everything but the data itself.
  static SafetensorsFile parseHeader(std::string_view header, uint64_t data_start, uint64_t size,
                                     const std::string& what);

  std::string path_;
  std::vector<uint8_t> bytes_;  // the whole file (parse) or only its tensor data (open)
  uint64_t data_start_ = 0;     // where the tensor data starts in bytes_
  std::map<std::string, std::string> metadata_;
  std::vector<TensorInfo> tensors_;      // sorted by begin offset
  std::map<std::string, size_t> index_;  // name → position in tensors_ (files may hold many)
};

// Writes a safetensors file (F32 and U8 tensors), used by tests and the GUI's exports: whole or
// not at all (AtomicFile).
struct NamedTensor {
  std::string name;
  DType dtype;
  Shape shape;
  std::vector<uint8_t> bytes;
};
void writeSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata);

}  // namespace attnviz
