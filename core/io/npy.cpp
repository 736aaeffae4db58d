#include "io/npy.h"

#include "base/atomic_file.h"
#include "base/error.h"

namespace attnviz {

// The .npy 1.0 preamble: magic, version, header length, and the header dict padded with spaces to
// a multiple of 64 bytes, ending in a newline.
std::string npyPreamble(const char* descr, const Shape& shape) {
  std::string shp = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    shp +=
        std::to_string(shape[i]) + (shape.size() == 1 ? "," : (i + 1 < shape.size() ? ", " : ""));
  shp += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shp + ", }";
  const size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t n = (uint16_t)header.size();
  std::string out("\x93NUMPY\x01\x00", 8);
  out += (char)(n & 0xFF);
  out += (char)(n >> 8);
  return out + header;
}

namespace {

void writeNpyRaw(const std::string& path, const char* descr, const void* data, size_t bytes,
                 const Shape& shape) {
  AtomicFile f(path);
  f.write(npyPreamble(descr, shape));
  f.write(data, bytes);
  f.commit();
}

}  // namespace

void writeNpy(const std::string& path, const float* data, const Shape& shape) {
  writeNpyRaw(path, "<f4", data, (size_t)numel(shape) * 4, shape);
}

void writeNpy(const std::string& path, const uint8_t* data, const Shape& shape) {
  writeNpyRaw(path, "|u1", data, (size_t)numel(shape), shape);
}

}  // namespace attnviz
