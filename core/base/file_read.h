// Reading a file a user names, bounded: its size checked before a byte is read, so that a huge or
// unreadable file is refused with a message naming it instead of filling the memory.
#pragma once

#include <cstdint>
#include <string>

namespace attnviz {

// The size of the file at `path`. Throws Error(Io) "PATH: cannot read WHAT (why)" when it cannot be
// read, Error(TooLarge) "PATH: WHAT is 80.0 MiB; at most 64.0 MiB are read" when it exceeds
// `max_bytes`. `what` names the file's kind ("the vocabulary file").
uint64_t checkedFileSize(const std::string& path, uint64_t max_bytes, const std::string& what);

// The whole file, once its size is checked as above (Error(Io) when reading stops short).
std::string readBoundedFile(const std::string& path, uint64_t max_bytes, const std::string& what);

}  // namespace attnviz
