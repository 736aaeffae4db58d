// Reading PyTorch checkpoints (torch.save files) without Python: the zip format (PyTorch >= 1.6)
// and the legacy format, a state_dict, a checkpoint dict holding one, or a whole pickled model.
// The pickle is read by a restricted unpickler (pickle.h) that never runs code; see
// docs/checkpoints.md for what is read, the limits and the errors.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/tensor.h"
#include "io/pickle.h"
#include "io/tensor_source.h"

namespace attnviz {

// What a file holds, judged from its first bytes (not its name).
enum class TensorFileFormat {
  Unknown,
  Safetensors,  // 8-byte header length, then a JSON object
  TorchZip,     // a zip archive: torch.save since PyTorch 1.6 (or TorchScript, refused on open)
  TorchLegacy,  // torch.save(..., _use_new_zipfile_serialization=False): pickles + raw storages
  TorchTar,     // PyTorch before 0.4 (a tar archive): recognised, not read
};
const char* tensorFileFormatName(TensorFileFormat f);  // "PyTorch checkpoint (zip)", ...

// Reads at most the first 512 bytes. Unknown when the file cannot be read.
TensorFileFormat sniffTensorFile(const std::string& path);
TensorFileFormat sniffTensorBytes(const uint8_t* data, size_t size);
inline bool looksLikeTorchCheckpoint(const std::string& path) {
  const TensorFileFormat f = sniffTensorFile(path);
  return f == TensorFileFormat::TorchZip || f == TensorFileFormat::TorchLegacy;
}

// Bounds on what one file may make the reader do; exceeding one is Error(TooLarge).
struct CheckpointLimits {
  pickle::Limits pickle;                         // objects, memo, stack, strings, integers
  uint64_t max_pickle_bytes = 64ull << 20;       // data.pkl (or the legacy pickles)
  uint64_t max_entries = 1'000'000;              // zip entries
  uint64_t max_tensors = 1'000'000;              // tensors named
  uint64_t max_name_bytes = 64ull << 20;         // all tensor names together
  uint64_t max_storage_bytes = 8ull << 30;       // storages read into memory, all together
  uint64_t max_broadcast_elements = 1ull << 24;  // a view with more elements than its storage
  uint32_t max_module_depth = 128;               // whole model: modules inside modules
  uint64_t max_module_visits = 1'000'000;        // whole model: modules visited
};

// Where the tensors were found.
enum class CheckpointLayout {
  StateDict,       // the file is a dict of name → tensor (model.state_dict())
  CheckpointDict,  // a dict holding one: {"model": state_dict, "optimizer": ..., "epoch": 3}
  WholeModel,      // torch.save(model): names rebuilt from _modules / _parameters / _buffers
};
const char* checkpointLayoutName(CheckpointLayout l);  // "state_dict", "checkpoint dict", ...

// How one tensor lies in its storage (elements, not bytes).
struct TensorLayout {
  std::string storage;  // the storage's key ("0" for archive/data/0)
  int64_t storage_offset = 0;
  std::vector<int64_t> strides;
  bool contiguous = true;  // row-major without gaps
  bool parameter = false;  // saved as an nn.Parameter
};

class TorchCheckpoint : public TensorSource {
 public:
  // Reads the pickle, picks the tensors and reads their storages. Throws Error (the kinds in
  // docs/checkpoints.md) naming the file and the entry or tensor.
  static std::unique_ptr<TorchCheckpoint> open(const std::string& path,
                                               const CheckpointLimits& limits = {});
  // The same for a file already in memory; `what` names it in messages.
  static std::unique_ptr<TorchCheckpoint> parse(std::vector<uint8_t> bytes, const std::string& what,
                                                const CheckpointLimits& limits = {});
  // A zip checkpoint taken apart: its data.pkl, and `storage(key, nbytes)` returning the bytes of
  // data/KEY (it may throw Error). For tests and the fuzzer.
  using StorageReader =
      std::function<std::vector<uint8_t>(const std::string& key, uint64_t nbytes)>;
  static std::unique_ptr<TorchCheckpoint> fromPickle(const std::vector<uint8_t>& data_pkl,
                                                     const StorageReader& storage,
                                                     const std::string& what,
                                                     const CheckpointLimits& limits = {});

  const std::string& path() const override { return path_; }
  std::string formatName() const override { return tensorFileFormatName(format_); }
  // In the order of the file (a state_dict's order). TensorInfo::begin/end: the bytes of its
  // storage the tensor spans, [first element, last element + 1).
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  const TensorInfo* find(const std::string& name) const override;

  // F32/F16/BF16/F64 tensors as float32 (views copied out element by element). Integer and bool
  // tensors: Error(UnsupportedDtype).
  Tensor toFloat(const TensorInfo& info) const override;
  using TensorSource::toFloat;
  // The values of any tensor in its own dtype, row-major and contiguous, little-endian.
  std::vector<uint8_t> contiguousBytes(const TensorInfo& info) const;
  const TensorLayout& layout(const TensorInfo& info) const;

  CheckpointLayout layout() const { return layout_; }
  // The dict keys leading to the state_dict ({"model"}, {"state_dict"}); empty when the file is
  // the state_dict or the model itself.
  const std::vector<std::string>& keyPath() const { return key_path_; }
  // Whole model: the class of the top module ("__main__.Net").
  const std::string& modelClass() const { return model_class_; }
  // "state_dict", "state_dict under [\"model\"] of a checkpoint dict", "whole model
  // __main__.Net": for the loader's messages.
  std::string describeLayout() const;
  // Entries not read (optimizer state, epoch, non-tensor values), Python classes a whole model
  // refers to: for the user's information, never errors.
  const std::vector<std::string>& notes() const { return notes_; }
  // A checkpoint dict's other entries ({"model_args": {…}, "iter_num": 5000, …}; TensorSource).
  const nlohmann::json& arguments() const override { return arguments_; }
  int pickleProtocol() const { return protocol_; }
  // The zip archive's folder ("archive", or the file's stem for older PyTorch); empty for legacy.
  const std::string& archiveName() const { return archive_; }

 private:
  TorchCheckpoint() = default;
  friend class CheckpointBuilder;

  struct Storage {
    std::vector<uint8_t> bytes;
    int element_size = 1;
  };

  std::string path_;
  TensorFileFormat format_ = TensorFileFormat::TorchZip;
  std::vector<TensorInfo> tensors_;
  std::vector<TensorLayout> layouts_;  // parallel to tensors_
  std::vector<size_t> storage_of_;     // parallel to tensors_: index into storages_
  std::vector<Storage> storages_;
  std::unordered_map<std::string, size_t> index_;  // name → position in tensors_
  CheckpointLayout layout_ = CheckpointLayout::StateDict;
  std::vector<std::string> key_path_;
  std::string model_class_;
  std::vector<std::string> notes_;
  nlohmann::json arguments_ = nlohmann::json::object();
  int protocol_ = 0;
  std::string archive_;
};

}  // namespace attnviz
