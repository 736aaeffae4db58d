#include "base/error.h"

#include <cstdio>

#include "base/tensor.h"

namespace attnviz {

const char* errorKindName(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::Io:
      return "io";
    case ErrorKind::FileTooShort:
      return "file-too-short";
    case ErrorKind::HeaderTooLarge:
      return "header-too-large";
    case ErrorKind::InvalidUtf8:
      return "invalid-utf8";
    case ErrorKind::InvalidJson:
      return "invalid-json";
    case ErrorKind::NotAnObject:
      return "not-an-object";
    case ErrorKind::DuplicateKey:
      return "duplicate-key";
    case ErrorKind::BadName:
      return "bad-name";
    case ErrorKind::BadMetadata:
      return "bad-metadata";
    case ErrorKind::UnknownDtype:
      return "unknown-dtype";
    case ErrorKind::UnsupportedDtype:
      return "unsupported-dtype";
    case ErrorKind::BadShape:
      return "bad-shape";
    case ErrorKind::SizeOverflow:
      return "size-overflow";
    case ErrorKind::BadOffsets:
      return "bad-offsets";
    case ErrorKind::TrailingBytes:
      return "trailing-bytes";
    case ErrorKind::Truncated:
      return "truncated";
    case ErrorKind::BadConfig:
      return "bad-config";
    case ErrorKind::BadVocabulary:
      return "bad-vocabulary";
    case ErrorKind::MissingTensor:
      return "missing-tensor";
    case ErrorKind::ShapeMismatch:
      return "shape-mismatch";
    case ErrorKind::UnusedTensor:
      return "unused-tensor";
    case ErrorKind::MissingInfo:
      return "missing-info";
    case ErrorKind::BadInput:
      return "bad-input";
    case ErrorKind::TooLarge:
      return "too-large";
    case ErrorKind::NonFinite:
      return "non-finite";
    case ErrorKind::Backend:
      return "backend";
    case ErrorKind::OutOfMemory:
      return "out-of-memory";
    case ErrorKind::Cancelled:
      return "cancelled";
    case ErrorKind::Usage:
      return "usage";
    case ErrorKind::BadArchive:
      return "bad-archive";
    case ErrorKind::BadPickle:
      return "bad-pickle";
    case ErrorKind::ForbiddenGlobal:
      return "forbidden-global";
    case ErrorKind::BadCheckpoint:
      return "bad-checkpoint";
  }
  return "unknown";
}

std::string formatBytes(unsigned long long bytes) {
  if (bytes < 1024) return std::to_string(bytes) + (bytes == 1 ? " byte" : " bytes");
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string shapeToString(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

}  // namespace attnviz
