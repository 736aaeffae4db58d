#include "base/file_read.h"

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace attnviz {

uint64_t checkedFileSize(const std::string& path, uint64_t max_bytes, const std::string& what) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(ErrorKind::Io, path + ": cannot read " + what + " (" + ec.message() + ")");
  if (size > max_bytes)
    throw Error(ErrorKind::TooLarge, path + ": " + what + " is " + formatBytes(size) +
                                         "; at most " + formatBytes(max_bytes) + " are read");
  return size;
}

std::string readBoundedFile(const std::string& path, uint64_t max_bytes, const std::string& what) {
  const uint64_t size = checkedFileSize(path, max_bytes, what);
  std::string text(size, '\0');  // the bytes, once
  std::ifstream in(path, std::ios::binary);
  if (!in.read(text.data(), static_cast<std::streamsize>(size)))
    throw Error(ErrorKind::Io, path + ": cannot read " + what + " (it ended early)");
  return text;
}

std::string readInputText(const std::string& path, const std::string& what) {
  std::string text = readBoundedFile(path, kMaxInputTextBytes, what);
  if (text.size() >= 2 && text.compare(text.size() - 2, 2, "\r\n") == 0)
    text.resize(text.size() - 2);
  else if (!text.empty() && text.back() == '\n')
    text.pop_back();
  if (text.find('\0') != std::string::npos)
    throw Error(ErrorKind::BadInput, path + ": " + what + " holds a NUL byte; is it a text file?");
  return text;
}

}  // namespace attnviz
