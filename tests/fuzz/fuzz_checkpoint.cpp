// libFuzzer target for PyTorch checkpoints (core/io/torch_checkpoint.h, core/io/pickle.h). Each
// input is tried
//  1. as a checkpoint file: TorchCheckpoint::parse (a zip archive through libzip, or the legacy
//     format), and
//  2. as a bare data.pkl: TorchCheckpoint::fromPickle, whose storages are made up on demand (bytes
//     of the declared size, up to 1 MiB each), so that mutated pickles reach the tensor checks
//     instead of stopping at the zip's CRC.
// Every tensor found is read: toFloat for float dtypes, contiguousBytes for the others. Only
// attnviz::Error may come out; anything else is a finding (a crash, a sanitizer report, another
// exception, a leak, a hang past -timeout, an allocation past -malloc_limit_mb).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arch/infer.h"
#include "base/error.h"
#include "io/torch_checkpoint.h"

using namespace attnviz;

namespace {

CheckpointLimits fuzzLimits() {
  CheckpointLimits lim;
  lim.max_storage_bytes = 64ull << 20;
  lim.max_broadcast_elements = 1ull << 20;
  return lim;
}

void readAll(const TorchCheckpoint& ck) {
  for (const TensorInfo& t : ck.tensors()) {
    try {
      if (isFloatDType(t.dtype))
        ck.toFloat(t);
      else
        ck.contiguousBytes(t);
    } catch (const Error&) {
    }
  }
  ck.describeLayout();
  // What the table of architectures reads from it: the names, the shapes, a model_args dict.
  try {
    inferConfig(ck, UserSupplied{});
  } catch (const Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const CheckpointLimits lim = fuzzLimits();
  const std::vector<uint8_t> bytes(data, data + size);
  try {
    readAll(*TorchCheckpoint::parse(bytes, "/nonexistent/fuzz.pt", lim));
  } catch (const Error&) {
  }
  try {
    const auto storage = [](const std::string& key, uint64_t nbytes) {
      if (nbytes > (1u << 20)) throw Error(ErrorKind::TooLarge, "fuzz: storage " + key);
      return std::vector<uint8_t>(nbytes, static_cast<uint8_t>(key.size()));
    };
    readAll(*TorchCheckpoint::fromPickle(bytes, storage, "/nonexistent/fuzz.pkl", lim));
  } catch (const Error&) {
  }
  return 0;
}
