// Errors of the attnviz core: one exception type carrying a machine-readable kind and a message
// a user can act on (it names the file, tensor or field, what was found and what was expected).
#pragma once

#include <stdexcept>
#include <string>

namespace attnviz {

// The advice an out-of-memory message of a device backend ends with (ErrorKind::OutOfMemory);
// a note that says the run was redone on the CPU leaves it out.
inline constexpr const char* kOutOfDeviceMemoryAdvice =
    ". Use shorter sentences, a smaller batch or the CPU backend";

enum class ErrorKind {
  Io,                // the file cannot be opened or read
  FileTooShort,      // fewer than 8 bytes: no header length
  HeaderTooLarge,    // header length above the cap or beyond the end of the file
  InvalidUtf8,       // header is not valid UTF-8
  InvalidJson,       // header/config is not valid JSON (or nested too deeply)
  NotAnObject,       // JSON root (or an entry) is not an object where one is required
  DuplicateKey,      // a key or tensor name occurs twice
  BadName,           // a tensor name or metadata key with control characters (never meant)
  BadMetadata,       // __metadata__ is not an object of strings
  UnknownDtype,      // dtype string safetensors does not define
  UnsupportedDtype,  // a safetensors dtype attnviz cannot read as weights (e.g. I64 for a weight)
  BadShape,          // shape not an array of non-negative integers, or too large
  SizeOverflow,      // shape × dtype size does not fit in 64 bits
  BadOffsets,        // data_offsets malformed, out of the buffer, overlapping, or leaving gaps
  TrailingBytes,     // bytes after the last tensor
  Truncated,         // file ends before the data the header promises
  BadConfig,         // config missing, wrong type, absurd value
  BadVocabulary,     // vocabulary empty, duplicate tokens, ids out of range
  MissingTensor,     // a tensor the family requires is not in the file
  ShapeMismatch,     // a tensor's shape disagrees with the config
  UnusedTensor,      // the file holds tensors the model does not use (a wrong family or size?)
  MissingInfo,       // the tensors cannot tell something the model needs (heads, special ids)
  BadInput,          // a sentence attnviz cannot encode (empty, unknown word, too long, ...)
  TooLarge,          // the memory a model or trace would need exceeds the limit, or a file
                     // exceeds one of the reader's bounds (pickle memo, objects, entries, ...)
  NonFinite,         // a pass computed NaN or infinite values (finite weights can overflow)
  Backend,           // a compute backend failed (CUDA error, no device, ...)
  OutOfMemory,       // a device backend (the GPU) ran out of memory for this request; the
                     // backend stays usable, and the request may be redone on the CPU
                     // (model/cpu_fallback.h)
  Cancelled,         // the user cancelled a long computation
  Usage,             // wrong command-line usage
  BadArchive,        // a zip archive attnviz cannot read safely: not a zip, no data.pkl, a missing
                     // or compressed-beyond-reason entry, entries overlapping, a CRC mismatch
  BadPickle,         // a pickle stream that is malformed, or uses opcodes or calls torch.save
                     // never writes
  ForbiddenGlobal,   // a pickle names a Python class or function attnviz does not load
  BadCheckpoint,     // a well-formed checkpoint that holds no tensors attnviz can take
                     // (a list, a TorchScript archive, a model whose modules are not modules)
};

const char* errorKindName(ErrorKind kind);

// A byte count for messages: "928 bytes", "1.5 KiB", "3.0 GiB".
std::string formatBytes(unsigned long long bytes);

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }

 private:
  ErrorKind kind_;
};

}  // namespace attnviz
