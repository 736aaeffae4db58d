#include "io/tensor_source.h"

#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace attnviz {

namespace {

struct DTypeInfo {
  const char* name;
  DType type;
  int size;
};
constexpr DTypeInfo kDTypes[] = {
    {"F64", DType::F64, 8},   {"F32", DType::F32, 4},         {"F16", DType::F16, 2},
    {"BF16", DType::BF16, 2}, {"I64", DType::I64, 8},         {"I32", DType::I32, 4},
    {"I16", DType::I16, 2},   {"I8", DType::I8, 1},           {"U8", DType::U8, 1},
    {"U16", DType::U16, 2},   {"U32", DType::U32, 4},         {"U64", DType::U64, 8},
    {"BOOL", DType::BOOL, 1}, {"F8_E4M3", DType::F8_E4M3, 1}, {"F8_E5M2", DType::F8_E5M2, 1},
};

float halfToFloat(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F;
  uint32_t mant = h & 0x3FF;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while ((mant & 0x400) == 0) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3FF;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7F800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

float bf16ToFloat(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

const std::map<std::string, std::string> kNoMetadata;

}  // namespace

uint64_t regularFileSize(const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status))
    throw Error(ErrorKind::Io, path + ": cannot open the file for reading (" +
                                   (ec ? ec.message() : std::string("no such file")) + ")");
  if (!std::filesystem::is_regular_file(status))
    throw Error(ErrorKind::Io, path + ": not a regular file");
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, path + ": cannot determine the file size");
  return size;
}

const char* dtypeName(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.name;
  return "?";
}

int dtypeSize(DType t) {
  for (const auto& d : kDTypes)
    if (d.type == t) return d.size;
  return 0;
}

bool isFloatDType(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool convertToFloat(const uint8_t* p, DType t, size_t n, float* out) {
  switch (t) {
    case DType::F32:
      if (n) std::memcpy(out, p, n * 4);  // out may be null when n is 0
      return true;
    case DType::F64:
      for (size_t i = 0; i < n; ++i) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        out[i] = static_cast<float>(d);
      }
      return true;
    case DType::F16:
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + 2 * i, 2);
        out[i] = t == DType::F16 ? halfToFloat(h) : bf16ToFloat(h);
      }
      return true;
    default:
      return false;
  }
}

Tensor TensorSource::toFloat(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) throw Error(ErrorKind::MissingTensor, path() + ": no tensor \"" + name + "\"");
  return toFloat(*t);
}

const std::map<std::string, std::string>& TensorSource::metadata() const {
  return kNoMetadata;
}

const nlohmann::json& TensorSource::arguments() const {
  static const nlohmann::json none = nlohmann::json::object();
  return none;
}

}  // namespace attnviz
