#include "io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/json_safe.h"
#include "base/safe_text.h"

namespace attnviz {

namespace {

constexpr DType kAllDTypes[] = {DType::F64,  DType::F32,     DType::F16,    DType::BF16,
                                DType::I64,  DType::I32,     DType::I16,    DType::I8,
                                DType::U8,   DType::U16,     DType::U32,    DType::U64,
                                DType::BOOL, DType::F8_E4M3, DType::F8_E5M2};

// Checked 64-bit multiplication: never through double, never wrapping.
bool mulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) return true;
  *out = a * b;
  return false;
}

uint64_t readLE64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Reads exactly `n` bytes at the file's current position; false at end of file.
bool readFully(int fd, void* out, uint64_t n, int* err) {
  auto* p = static_cast<uint8_t*>(out);
  while (n > 0) {
    const ssize_t got = ::read(fd, p, (size_t)std::min<uint64_t>(n, uint64_t(1) << 30));
    if (got < 0) {
      if (errno == EINTR) continue;
      *err = errno;
      return false;
    }
    if (got == 0) {
      *err = 0;
      return false;
    }
    p += got;
    n -= (uint64_t)got;
  }
  return true;
}

// Whether the first 8 bytes read as text (printable ASCII, tab, line breaks, UTF-8 — its last
// character may be cut): then the "header length" is letters, and the file is no safetensors file
// at all.
bool startsWithText(const uint8_t* first8) {
  const std::string_view s(reinterpret_cast<const char*>(first8), 8);
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f) return false;
      ++i;
      continue;
    }
    if (const size_t n = utf8SequenceAt(s, i)) {
      i += n;
      continue;
    }
    // A character cut by the 8th byte: a lead byte and continuation bytes up to the end.
    const size_t need = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
    if (need == 0 || i + need <= s.size()) return false;
    for (size_t k = i + 1; k < s.size(); ++k)
      if ((static_cast<uint8_t>(s[k]) & 0xC0) != 0x80) return false;
    return c <= 0xF4;
  }
  return true;
}

// The header length's checks, shared by open() and parse().
uint64_t checkHeaderLength(const uint8_t* first8, uint64_t size, const std::string& what) {
  const uint64_t n = readLE64(first8);
  if ((n > SafetensorsFile::kMaxHeaderBytes || n > size - 8) && startsWithText(first8)) {
    std::string start(reinterpret_cast<const char*>(first8), 8);
    start = start.substr(0, start.find_first_of("\r\n"));
    throw Error(ErrorKind::HeaderTooLarge,
                what + ": this is not a safetensors file (it starts with text: \"" +
                    terminalSafe(start) +
                    "\"); a safetensors file starts with the 8-byte length of its JSON header");
  }
  if (n > SafetensorsFile::kMaxHeaderBytes)
    throw Error(ErrorKind::HeaderTooLarge,
                what + ": header length " + std::to_string(n) + " bytes exceeds the limit of " +
                    std::to_string(SafetensorsFile::kMaxHeaderBytes) + " bytes");
  if (n > size - 8)
    throw Error(ErrorKind::HeaderTooLarge,
                what + ": header length " + std::to_string(n) + " bytes runs past the end of the " +
                    std::to_string(size) + "-byte file (truncated or not a safetensors file?)");
  return n;
}

[[noreturn]] void tooShort(uint64_t size, const std::string& what) {
  throw Error(ErrorKind::FileTooShort, what + ": file is " + std::to_string(size) +
                                           " bytes, too short for a safetensors header (8 bytes)");
}

// Closes the descriptor however open() leaves.
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  // The header is read and checked first: only a file whose header holds up is read further, so
  // an 8 GiB file that is not safetensors fails at once. O_NONBLOCK: a FIFO must not block the
  // open; only regular files are read (a directory or a device reports a meaningless size).
  FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (file.fd < 0) {
    const int err = errno;
    throw Error(ErrorKind::Io,
                path + ": cannot open the file for reading (" + std::strerror(err) + ")");
  }
  struct stat st;
  if (::fstat(file.fd, &st) != 0)
    throw Error(ErrorKind::Io, path + ": cannot determine the file size");
  if (!S_ISREG(st.st_mode)) throw Error(ErrorKind::Io, path + ": not a regular file");
  const uint64_t size = (uint64_t)st.st_size;
  if (size < 8) tooShort(size, path);
  int err = 0;
  auto readError = [&](const char* what) {
    return Error(
        err ? ErrorKind::Io : ErrorKind::Truncated,
        path + ": " +
            (err ? std::string("read error in the ") + what + " (" + std::strerror(err) + ")"
                 : std::string("the file ended early, in the ") + what +
                       " (did it change while being read?)"));
  };
  uint8_t head[8];
  if (!readFully(file.fd, head, 8, &err)) throw readError("header length");
  const uint64_t n = checkHeaderLength(head, size, path);
  std::string header(n, '\0');
  if (!readFully(file.fd, header.data(), n, &err)) throw readError("header");
  SafetensorsFile f = parseHeader(header, 8 + n, size, path);
  // Only now the tensor data.
  const uint64_t data_bytes = size - 8 - n;
  try {
    f.bytes_.resize((size_t)data_bytes);
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::TooLarge, path + ": cannot allocate " + formatBytes(data_bytes) +
                                         " for the tensor data (out of memory)");
  }
  if (!readFully(file.fd, f.bytes_.data(), data_bytes, &err)) throw readError("tensor data");
  f.data_start_ = 0;
  return f;
}

SafetensorsFile SafetensorsFile::parse(std::vector<uint8_t> bytes, const std::string& what) {
  const uint64_t size = bytes.size();
  if (size < 8) tooShort(size, what);
  const uint64_t n = checkHeaderLength(bytes.data(), size, what);
  SafetensorsFile f = parseHeader(
      std::string_view(reinterpret_cast<const char*>(bytes.data() + 8), n), 8 + n, size, what);
  f.bytes_ = std::move(bytes);
  f.data_start_ = 8 + n;
  return f;
}

SafetensorsFile SafetensorsFile::parseHeader(std::string_view header, uint64_t data_start,
                                             uint64_t size, const std::string& what) {
  SafetensorsFile f;
  f.path_ = what;
  if (size_t bad = 0; !isValidUtf8(header, &bad))
    throw Error(ErrorKind::InvalidUtf8,
                what + ": header is not valid UTF-8 (invalid sequence at byte " +
                    std::to_string(bad) + " of the header)");
  nlohmann::json j = parseJsonStrict(header, what + " header");
  if (!j.is_object())
    throw Error(ErrorKind::NotAnObject,
                what + ": header JSON is " + jsonTypeName(j) + ", expected an object");
  const uint64_t buffer = size - data_start;

  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& name = it.key();
    const auto& v = it.value();
    if (name == "__metadata__") {
      if (!v.is_object())
        throw Error(ErrorKind::BadMetadata,
                    what + ": __metadata__ is " + jsonTypeName(v) + ", expected an object");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (size_t at = findControlChar(m.key()); at != std::string::npos)
          throw Error(ErrorKind::BadName, what + ": __metadata__ key \"" + clipForMessage(m.key()) +
                                              "\" contains " + describeControlChar(m.key(), at));
        if (!m.value().is_string())
          throw Error(ErrorKind::BadMetadata, what + ": __metadata__[\"" + clipForMessage(m.key()) +
                                                  "\"] is " + jsonTypeName(m.value()) +
                                                  ", expected a string");
        f.metadata_[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    const std::string where = what + ": tensor \"" + clipForMessage(name) + "\"";
    if (size_t at = findControlChar(name); at != std::string::npos)
      throw Error(ErrorKind::BadName, where + ": the name contains " +
                                          describeControlChar(name, at) +
                                          "; no model names a tensor so");
    if (!v.is_object())
      throw Error(ErrorKind::NotAnObject,
                  where + " is " + jsonTypeName(v) + ", expected an object");
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!v.contains(key)) throw Error(ErrorKind::NotAnObject, where + " has no \"" + key + "\"");
    TensorInfo info;
    info.name = name;
    // dtype
    const auto& dt = v["dtype"];
    if (!dt.is_string()) throw Error(ErrorKind::UnknownDtype, where + ": dtype is not a string");
    const std::string dts = dt.get<std::string>();
    const DType* found = nullptr;
    for (const DType& d : kAllDTypes)
      if (dts == dtypeName(d)) found = &d;
    if (!found)
      throw Error(ErrorKind::UnknownDtype,
                  where + ": unknown dtype \"" + clipForMessage(dts, 40) + "\"");
    info.dtype = *found;
    // shape
    const auto& sh = v["shape"];
    if (!sh.is_array()) throw Error(ErrorKind::BadShape, where + ": shape is not an array");
    if (sh.size() > 16)
      throw Error(ErrorKind::BadShape,
                  where + ": shape has " + std::to_string(sh.size()) + " dimensions (at most 16)");
    uint64_t elements = 1;
    for (const auto& d : sh) {
      if (!d.is_number_integer())
        throw Error(ErrorKind::BadShape, where + ": shape entry " + clipForMessage(d.dump(), 40) +
                                             " is not a non-negative integer");
      if (d.is_number_unsigned() ? false : d.get<int64_t>() < 0)
        throw Error(ErrorKind::BadShape,
                    where + ": shape entry " + clipForMessage(d.dump(), 40) + " is negative");
      uint64_t dim = d.get<uint64_t>();
      if (dim > (uint64_t(1) << 62))
        throw Error(ErrorKind::BadShape,
                    where + ": shape entry " + clipForMessage(d.dump(), 40) + " is absurdly large");
      info.shape.push_back(static_cast<int64_t>(dim));
      if (mulOverflows(elements, dim, &elements))
        throw Error(ErrorKind::SizeOverflow,
                    where + ": shape " + sh.dump() + " has more elements than 64 bits can count");
    }
    uint64_t nbytes;
    if (mulOverflows(elements, static_cast<uint64_t>(dtypeSize(*found)), &nbytes))
      throw Error(ErrorKind::SizeOverflow, where + ": shape " + sh.dump() + " × " +
                                               std::to_string(dtypeSize(*found)) +
                                               " bytes overflows 64 bits");
    // offsets
    const auto& off = v["data_offsets"];
    if (!off.is_array() || off.size() != 2)
      throw Error(ErrorKind::BadOffsets, where + ": data_offsets must be [begin, end], found " +
                                             clipForMessage(off.dump(), 80));
    for (const auto& o : off)
      if (!o.is_number_integer() || (!o.is_number_unsigned() && o.get<int64_t>() < 0))
        throw Error(ErrorKind::BadOffsets,
                    where + ": data_offsets entries must be non-negative integers, found " +
                        clipForMessage(off.dump(), 80));
    info.begin = off[0].get<uint64_t>();
    info.end = off[1].get<uint64_t>();
    if (info.end < info.begin)
      throw Error(ErrorKind::BadOffsets, where + ": data_offsets end " + std::to_string(info.end) +
                                             " is before begin " + std::to_string(info.begin));
    if (info.end - info.begin != nbytes)
      throw Error(ErrorKind::BadOffsets, where + ": data_offsets span " +
                                             std::to_string(info.end - info.begin) +
                                             " bytes but shape " + sh.dump() + " of " + dts +
                                             " needs " + std::to_string(nbytes));
    f.tensors_.push_back(std::move(info));
  }
  // The tensors must tile the buffer exactly: no gaps, no overlaps, nothing after the last. A
  // layout that tiles [0, end) but ends past the buffer is a truncated file; a tensor that lies
  // past the buffer after a gap has offsets that are simply wrong.
  std::sort(f.tensors_.begin(), f.tensors_.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t expect = 0;
  for (const auto& t : f.tensors_) {
    const std::string range = "[" + std::to_string(t.begin) + ", " + std::to_string(t.end) + ")";
    if (t.begin < expect)
      throw Error(ErrorKind::BadOffsets,
                  what + ": tensor \"" + clipForMessage(t.name) + "\" data_offsets " + range +
                      " overlap the previous tensor, which ends at byte " + std::to_string(expect));
    if (t.begin > expect) {
      if (t.end > buffer)
        throw Error(ErrorKind::BadOffsets, what + ": tensor \"" + clipForMessage(t.name) +
                                               "\" data_offsets " + range + " lie outside the " +
                                               std::to_string(buffer) + "-byte data buffer");
      throw Error(ErrorKind::BadOffsets,
                  what + ": gap of " + std::to_string(t.begin - expect) +
                      " bytes before tensor \"" + clipForMessage(t.name) + "\" (data_offsets " +
                      range + "; the previous tensor ends at byte " + std::to_string(expect) + ")");
    }
    expect = t.end;
  }
  if (expect > buffer) {
    const TensorInfo* cut = nullptr;
    for (const auto& t : f.tensors_)
      if (t.end > buffer) {
        cut = &t;
        break;
      }
    throw Error(ErrorKind::Truncated,
                what + ": file truncated: the header promises " + std::to_string(expect) +
                    " bytes of tensor data but the file holds " + std::to_string(buffer) +
                    " (tensor \"" + clipForMessage(cut->name) + "\" ends at byte " +
                    std::to_string(cut->end) + ")");
  }
  if (expect < buffer)
    throw Error(ErrorKind::TrailingBytes,
                what + ": " + std::to_string(buffer - expect) +
                    " bytes after the last tensor (the header accounts for " +
                    std::to_string(expect) + " of " + std::to_string(buffer) + " data bytes)");
  for (size_t i = 0; i < f.tensors_.size(); ++i) f.index_.emplace(f.tensors_[i].name, i);
  return f;
}

const TensorInfo* SafetensorsFile::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

Tensor SafetensorsFile::toFloat(const TensorInfo& info) const {
  Tensor out(info.shape);
  const uint8_t* p = bytes_.data() + data_start_ + info.begin;  // may be unaligned: copied only
  if (!convertToFloat(p, info.dtype, out.data.size(), out.data.data()))
    throw Error(ErrorKind::UnsupportedDtype, path_ + ": tensor \"" + clipForMessage(info.name) +
                                                 "\" has dtype " + dtypeName(info.dtype) +
                                                 "; weights must be F32, F16, BF16 or F64");
  return out;
}

ByteTensor SafetensorsFile::toBytes(const std::string& name) const {
  const TensorInfo* t = find(name);
  if (!t) throw Error(ErrorKind::MissingTensor, path_ + ": no tensor \"" + name + "\"");
  if (t->dtype != DType::U8 && t->dtype != DType::BOOL && t->dtype != DType::I8)
    throw Error(ErrorKind::UnsupportedDtype, path_ + ": tensor \"" + name + "\" has dtype " +
                                                 dtypeName(t->dtype) + ", expected U8 or BOOL");
  ByteTensor out(t->shape);
  if (!out.data.empty())  // an empty vector's data() may be null: memcpy must not see it
    std::memcpy(out.data.data(), bytes_.data() + data_start_ + t->begin, out.data.size());
  return out;
}

void writeSafetensors(const std::string& path, const std::vector<NamedTensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::json h = nlohmann::json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    h[t.name] = {{"dtype", dtypeName(t.dtype)},
                 {"shape", t.shape},
                 {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  if (!metadata.empty()) h["__metadata__"] = metadata;
  std::string header = h.dump();
  while (header.size() % 8) header += ' ';
  AtomicFile out(path);
  uint8_t len[8];
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(n >> (8 * i));
  out.write(len, 8);
  out.write(header);
  for (const auto& t : tensors) out.write(t.bytes.data(), t.bytes.size());
  out.commit();
}

}  // namespace attnviz
