// Files that are whole or absent: every write goes to a temporary file in the same folder, is
// flushed, synced and checked, and is renamed into place only when complete. Any error removes
// what was written and throws Error(Io) naming the file, the step that failed and the system's
// reason ("No space left on device", "File too large").
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnviz {

class AtomicFile {
 public:
  // Creates the temporary file ".NAME.part-…" beside `path` (mode 0666 less the umask).
  explicit AtomicFile(std::string path);
  // Removes the temporary file unless it was committed; never throws.
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  // Buffered; a failed write throws (and the destructor then removes the temporary file).
  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // Writes what is buffered, fsyncs and closes, checking each step: the file is complete on disk
  // but not yet in place.
  void finish();
  // finish() when not done, then renames the file into place.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temporaryPath() const { return tmp_; }
  uint64_t written() const { return written_ + buffer_.size(); }

 private:
  void writeThrough(const char* p, size_t bytes);  // every byte, or fail()
  void flushBuffer();
  [[noreturn]] void fail(const std::string& step, int err);
  void discard() noexcept;

  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;  // bytes handed to the system
  std::vector<char> buffer_;
  bool finished_ = false, committed_ = false;
};

// Files that appear together (a trace dump): each is written and finished as an AtomicFile; only
// when every one is complete does commitAll() rename them into place. An error before that leaves
// none of them behind.
class AtomicFileSet {
 public:
  AtomicFile& add(const std::string& path);
  // finish() for every file, then the renames. A rename that fails (the name is a folder, ...)
  // throws, and the files not yet renamed are removed.
  void commitAll();

 private:
  std::vector<std::unique_ptr<AtomicFile>> files_;
};

// Writes `bytes` to `path` through an AtomicFile.
void writeFileAtomically(const std::string& path, std::string_view bytes);

}  // namespace attnviz
