#include "base/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "base/error.h"

namespace attnviz {

namespace {

constexpr size_t kBufferBytes = size_t(1) << 20;

// A name for the temporary file: hidden, beside the target, unique to this process and call.
std::string temporaryName(const std::string& path, int attempt) {
  static std::atomic<uint64_t> counter{0};
  const std::filesystem::path p(path);
  std::string base = p.filename().string();
  if (base.size() > 100) base.resize(100);  // stay under NAME_MAX with the suffix
  const uint64_t stamp =
      (uint64_t)std::chrono::steady_clock::now().time_since_epoch().count() ^ (uint64_t)attempt;
  const std::string name = "." + base + ".part-" + std::to_string(::getpid()) + "-" +
                           std::to_string(counter++) + "-" + std::to_string(stamp % 1000000);
  return (p.parent_path() / name).string();
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    throw Error(ErrorKind::Io, path_ + ": cannot write the file: a folder of that name exists");
  for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
    tmp_ = temporaryName(path_, attempt);
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd_ < 0 && errno != EEXIST) {
      const int err = errno;
      throw Error(ErrorKind::Io, path_ + ": cannot create the file (" + std::strerror(err) + ")");
    }
  }
  if (fd_ < 0) throw Error(ErrorKind::Io, path_ + ": cannot create a temporary file beside it");
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (!tmp_.empty()) ::unlink(tmp_.c_str());
  tmp_.clear();
}

void AtomicFile::fail(const std::string& step, int err) {
  discard();
  throw Error(ErrorKind::Io, path_ + ": " + step + " failed: " + std::strerror(err) + " (after " +
                                 std::to_string(written_) + " bytes; nothing was left behind)");
}

void AtomicFile::write(const void* data, size_t bytes) {
  if (fd_ < 0 || finished_)
    throw Error(ErrorKind::Io, path_ + ": internal error: write after the file was closed");
  const char* p = static_cast<const char*>(data);
  if (buffer_.size() + bytes > kBufferBytes) flushBuffer();
  if (bytes >= kBufferBytes)
    writeThrough(p, bytes);
  else
    buffer_.insert(buffer_.end(), p, p + bytes);
}

void AtomicFile::writeThrough(const char* p, size_t bytes) {
  while (bytes > 0) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("writing", errno);
    }
    if (n == 0) fail("writing", EIO);
    p += n;
    bytes -= (size_t)n;
    written_ += (uint64_t)n;
  }
}

void AtomicFile::flushBuffer() {
  writeThrough(buffer_.data(), buffer_.size());
  buffer_.clear();
}

void AtomicFile::finish() {
  if (finished_) return;
  if (fd_ < 0) throw Error(ErrorKind::Io, path_ + ": internal error: the file was discarded");
  flushBuffer();
  std::vector<char>().swap(buffer_);  // a set keeps finished files until it commits them all
  // Filesystems without fsync (EINVAL) have nothing more to flush.
  if (::fsync(fd_) != 0 && errno != EINVAL) fail("flushing to disk", errno);
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) fail("closing", errno);
  finished_ = true;
}

void AtomicFile::commit() {
  if (committed_) return;
  finish();
  if (::rename(tmp_.c_str(), path_.c_str()) != 0)
    fail("moving the finished file into place", errno);
  committed_ = true;
}

AtomicFile& AtomicFileSet::add(const std::string& path) {
  files_.push_back(std::make_unique<AtomicFile>(path));
  return *files_.back();
}

void AtomicFileSet::commitAll() {
  for (auto& f : files_) f->finish();
  for (size_t i = 0; i < files_.size(); ++i) {
    try {
      files_[i]->commit();
    } catch (const Error& e) {
      // Renames within one folder fail only when something took the name (a folder, ...).
      throw Error(e.kind(), std::string(e.what()) + "; " + std::to_string(i) + " of the " +
                                std::to_string(files_.size()) +
                                " files were already in place, the others were removed");
    }
  }
  files_.clear();
}

void writeFileAtomically(const std::string& path, std::string_view bytes) {
  AtomicFile f(path);
  f.write(bytes);
  f.commit();
}

}  // namespace attnviz
