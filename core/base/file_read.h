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

// A model's input given as a file (the CLI's --src-file and the like, the application's File ›
// Open input text): at most kMaxInputTextBytes, as above; one final line break ("\n" or "\r\n")
// dropped (a text file's last line ends with one); Error(BadInput) "PATH: WHAT holds a NUL byte"
// for a file that is no text.
constexpr uint64_t kMaxInputTextBytes = 16ull << 20;
std::string readInputText(const std::string& path, const std::string& what);

}  // namespace attnviz
