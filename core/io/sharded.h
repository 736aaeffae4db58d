// A model saved in several files (save_pretrained's shards): model.safetensors.index.json or
// pytorch_model.bin.index.json names the shard of every tensor ({"weight_map": {name: file}}),
// and this source reads them as one file of named tensors. The shards are read one at a time: at
// opening, each in turn for its names and shapes, and then the one holding the tensor asked for
// (kept until a tensor of another shard is asked), so that at most one shard's data is held.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/tensor_source.h"

namespace attnviz {

// Opens one shard (the caller's choice of format by the file's first bytes).
using OpenTensorFile = std::function<std::unique_ptr<TensorSource>(const std::string& path)>;

// Whether `path`'s file name is an index of shards (ends in ".index.json").
bool isShardIndex(const std::string& path);

class ShardedSource : public TensorSource {
 public:
  static constexpr uint64_t kMaxIndexBytes = 64ull << 20;
  static constexpr int kMaxShards = 10000;

  // Reads the index at `index_path` and each shard it names, which must be a file inside the
  // index's folder. Throws Error: InvalidJson / NotAnObject / BadConfig for a malformed index,
  // BadInput for a shard outside the folder, Io for a missing one, MissingTensor for a name the
  // index places in a shard that does not hold it, DuplicateKey for a name two shards hold,
  // TooLarge (before any shard is read) when the shards add up to more than `max_bytes`.
  static std::unique_ptr<ShardedSource> open(const std::string& index_path,
                                             const OpenTensorFile& open_shard,
                                             uint64_t max_bytes = UINT64_MAX);

  const std::string& path() const override { return path_; }
  std::string formatName() const override;
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  const TensorInfo* find(const std::string& name) const override;
  Tensor toFloat(const TensorInfo& info) const override;
  using TensorSource::toFloat;

  const std::vector<std::string>& shards() const { return shards_; }  // resolved paths
  uint64_t bytes() const { return bytes_; }                           // the shards' sizes added

 private:
  ShardedSource() = default;
  const TensorSource& shard(int i) const;  // opened on demand; the lock held

  std::string path_;
  std::string format_;               // the shards' format ("safetensors", …)
  std::vector<std::string> shards_;  // in the order the index first names them
  std::vector<TensorInfo> tensors_;  // every shard's, in shard order
  std::vector<int> shard_of_;        // per tensor
  std::map<std::string, size_t> index_;
  uint64_t bytes_ = 0;
  OpenTensorFile open_;
  mutable std::mutex mutex_;
  mutable int open_index_ = -1;
  mutable std::unique_ptr<TensorSource> open_shard_;
};

}  // namespace attnviz
