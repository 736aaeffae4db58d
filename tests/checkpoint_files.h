// Building PyTorch checkpoints byte by byte for the tests: a pickle opcode writer, the zip and
// legacy containers around it (zip through libzip), and a small valid state_dict to start from.
// Everything here only writes bytes; nothing is ever unpickled by Python.
#pragma once

#include <zip.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace attnviz::ckpt_test {

using Bytes = std::vector<uint8_t>;

inline Bytes readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
inline void writeFile(const std::string& path, const Bytes& b) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}
inline void appendLE(Bytes& b, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}
inline Bytes floatBytes(const std::vector<float>& v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// Pickle opcodes, written as pickletools would list them.
class Pickle {
 public:
  Bytes b;

  Pickle& op(uint8_t o) {
    b.push_back(o);
    return *this;
  }
  Pickle& raw(const Bytes& x) {
    b.insert(b.end(), x.begin(), x.end());
    return *this;
  }
  Pickle& proto(int v = 2) { return op(0x80).op(static_cast<uint8_t>(v)); }
  Pickle& stop() { return op('.'); }
  Pickle& mark() { return op('('); }
  Pickle& none() { return op('N'); }
  Pickle& boolean(bool v) { return op(v ? 0x88 : 0x89); }
  Pickle& integer(int64_t v) {
    if (v >= 0 && v < 256) return op('K').op(static_cast<uint8_t>(v));
    if (v >= INT32_MIN && v <= INT32_MAX) {
      op('J');
      appendLE(b, static_cast<uint32_t>(static_cast<int32_t>(v)), 4);
      return *this;
    }
    op(0x8a).op(8);
    appendLE(b, static_cast<uint64_t>(v), 8);
    return *this;
  }
  Pickle& real(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    op('G');
    for (int i = 7; i >= 0; --i) b.push_back(static_cast<uint8_t>(bits >> (8 * i)));
    return *this;
  }
  Pickle& str(const std::string& s) {
    op('X');
    appendLE(b, s.size(), 4);
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) {
    op('c');
    b.insert(b.end(), module.begin(), module.end());
    b.push_back('\n');
    b.insert(b.end(), name.begin(), name.end());
    b.push_back('\n');
    return *this;
  }
  Pickle& emptyTuple() { return op(')'); }
  Pickle& emptyList() { return op(']'); }
  Pickle& emptyDict() { return op('}'); }
  Pickle& tuple() { return op('t'); }
  Pickle& tuple1() { return op(0x85); }
  Pickle& tuple2() { return op(0x86); }
  Pickle& tuple3() { return op(0x87); }
  Pickle& reduce() { return op('R'); }
  Pickle& newobj() { return op(0x81); }
  Pickle& build() { return op('b'); }
  Pickle& setitem() { return op('s'); }
  Pickle& setitems() { return op('u'); }
  Pickle& append() { return op('a'); }
  Pickle& appends() { return op('e'); }
  Pickle& binpersid() { return op('Q'); }
  Pickle& put(uint8_t i) { return op('q').op(i); }
  Pickle& get(uint8_t i) { return op('h').op(i); }
  Pickle& ints(const std::vector<int64_t>& v) {
    mark();
    for (int64_t x : v) integer(x);
    return tuple();
  }
  Pickle& orderedDict() { return global("collections", "OrderedDict").emptyTuple().reduce(); }
  // The persistent id of a zip checkpoint's storage.
  Pickle& storage(const std::string& key, int64_t numel, const std::string& type = "FloatStorage") {
    return mark()
        .str("storage")
        .global("torch", type)
        .str(key)
        .str("cpu")
        .integer(numel)
        .tuple()
        .binpersid();
  }
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, False, OrderedDict()).
  Pickle& tensor(const std::string& key, int64_t numel, int64_t offset,
                 const std::vector<int64_t>& size, const std::vector<int64_t>& stride,
                 const std::string& type = "FloatStorage") {
    global("torch._utils", "_rebuild_tensor_v2").mark();
    storage(key, numel, type).integer(offset).ints(size).ints(stride).boolean(false).orderedDict();
    return tuple().reduce();
  }
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> size;
  std::vector<float> values;  // row-major; the storage holds exactly these
};

// An OrderedDict state_dict of contiguous F32 tensors, storage i for tensor i.
inline Bytes stateDictPickle(const std::vector<TensorSpec>& tensors) {
  Pickle p;
  p.proto().orderedDict().mark();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    std::vector<int64_t> stride(t.size.size(), 1);
    for (size_t d = t.size.size(); d-- > 1;) stride[d - 1] = stride[d] * t.size[d];
    p.str(t.name).tensor(std::to_string(i), static_cast<int64_t>(t.values.size()), 0, t.size,
                         stride);
  }
  return p.setitems().stop().b;
}

// A zip archive written by libzip: entries stored (or deflated), in this order.
struct ZipEntry {
  std::string name;
  Bytes data;
  bool deflate = false;
};
inline Bytes zipBytes(const std::vector<ZipEntry>& entries, const std::string& tmp_path) {
  int err = 0;
  zip_t* z = zip_open(tmp_path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
  if (!z) throw std::runtime_error("test: zip_open for writing failed");
  for (const auto& e : entries) {
    zip_source_t* s = zip_source_buffer(z, e.data.data(), e.data.size(), 0);
    const zip_int64_t i = zip_file_add(z, e.name.c_str(), s, ZIP_FL_OVERWRITE | ZIP_FL_ENC_UTF_8);
    if (i < 0) throw std::runtime_error("test: zip_file_add failed");
    zip_set_file_compression(z, static_cast<zip_uint64_t>(i),
                             e.deflate ? ZIP_CM_DEFLATE : ZIP_CM_STORE, 0);
    zip_file_set_mtime(z, static_cast<zip_uint64_t>(i), 0, 0);
  }
  if (zip_close(z) != 0) throw std::runtime_error("test: zip_close failed");
  return readFile(tmp_path);
}

// A torch.save zip checkpoint: archive/data.pkl, archive/data/KEY, archive/version.
inline std::vector<ZipEntry> checkpointEntries(const Bytes& pkl, const std::vector<Bytes>& storages,
                                               const std::string& archive = "archive") {
  std::vector<ZipEntry> e{{archive + "/data.pkl", pkl}};
  for (size_t i = 0; i < storages.size(); ++i)
    e.push_back({archive + "/data/" + std::to_string(i), storages[i]});
  e.push_back({archive + "/version", {'3', '\n'}});
  return e;
}

// The legacy format: magic, protocol 1001, sys_info, the object pickle (storage ids are 6-tuples),
// the storage keys, then each storage as an 8-byte element count and its bytes.
inline Bytes legacyBytes(const Bytes& object_pickle, const std::vector<std::string>& keys,
                         const std::vector<std::pair<uint64_t, Bytes>>& storages,
                         bool little_endian = true) {
  Pickle p;
  p.proto()
      .op(0x8a)
      .op(10)
      .raw({0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19})
      .stop();
  p.proto().op('M').op(0xE9).op(0x03).stop();  // BININT2 1001
  p.proto().emptyDict().mark().str("protocol_version").integer(1001).str("little_endian");
  p.boolean(little_endian).str("type_sizes").emptyDict().mark().str("short").integer(2);
  p.str("int").integer(4).str("long").integer(4).setitems().setitems().stop();
  p.raw(object_pickle);
  p.proto().emptyList().mark();
  for (const auto& k : keys) p.str(k);
  p.appends().stop();
  for (const auto& [count, bytes] : storages) {
    appendLE(p.b, count, 8);
    p.raw(bytes);
  }
  return p.b;
}

// The legacy persistent id: ('storage', torch.TYPE, key, 'cpu', numel, None).
inline Pickle& legacyStorage(Pickle& p, const std::string& key, int64_t numel,
                             const std::string& type = "FloatStorage") {
  return p.mark()
      .str("storage")
      .global("torch", type)
      .str(key)
      .str("cpu")
      .integer(numel)
      .none()
      .tuple()
      .binpersid();
}

}  // namespace attnviz::ckpt_test
