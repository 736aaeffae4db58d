#include "io/sharded.h"

#include <cstdint>
#include <filesystem>

#include "base/error.h"
#include "base/file_read.h"
#include "base/folder_path.h"
#include "base/json_safe.h"

namespace attnviz {

namespace {

bool endsWith(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string fileName(const std::string& path) {
  return std::filesystem::path(path).filename().string();
}

}  // namespace

bool isShardIndex(const std::string& path) {
  return endsWith(fileName(path), ".index.json");
}

std::unique_ptr<ShardedSource> ShardedSource::open(const std::string& index_path,
                                                   const OpenTensorFile& open_shard,
                                                   uint64_t max_bytes) {
  const std::string text = readBoundedFile(index_path, kMaxIndexBytes, "the index of shards");
  const nlohmann::json index = parseJsonStrict(text, index_path);
  if (!index.is_object())
    throw Error(ErrorKind::NotAnObject,
                index_path + ": the index is " + jsonTypeName(index) + ", expected an object");
  if (!index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(ErrorKind::BadConfig,
                index_path + ": \"weight_map\" is " +
                    (index.contains("weight_map") ? jsonTypeName(index["weight_map"])
                                                  : std::string("missing")) +
                    ", expected an object naming each tensor's file");
  const nlohmann::json& map = index["weight_map"];
  if (map.empty())
    throw Error(ErrorKind::BadConfig, index_path + ": \"weight_map\" names no tensor");

  std::unique_ptr<ShardedSource> s(new ShardedSource());
  s->path_ = index_path;
  s->open_ = open_shard;
  const std::string folder = std::filesystem::path(index_path).parent_path().string();
  std::map<std::string, int> shard_index;  // resolved path → position in shards_
  std::map<std::string, int> placed;       // tensor name → the shard the index names
  for (const auto& [name, file] : map.items()) {
    const std::string where = index_path + ": weight_map[\"" + clipForMessage(name, 80) + "\"]";
    if (!file.is_string())
      throw Error(ErrorKind::BadConfig,
                  where + " is " + jsonTypeName(file) + ", expected a file name");
    const std::string path = fileInsideFolder(folder, file.get<std::string>(), where);
    auto [it, added] = shard_index.emplace(path, (int)s->shards_.size());
    if (added) {
      if ((int)s->shards_.size() == kMaxShards)
        throw Error(ErrorKind::TooLarge, index_path + ": the index names more than " +
                                             std::to_string(kMaxShards) + " files");
      s->shards_.push_back(path);
    }
    placed[name] = it->second;
  }
  for (const std::string& shard : s->shards_) s->bytes_ += regularFileSize(shard);
  if (s->bytes_ > max_bytes)
    throw Error(ErrorKind::TooLarge, index_path + ": the " + std::to_string(s->shards_.size()) +
                                         " shards hold " + formatBytes(s->bytes_) +
                                         "; the limit is " + formatBytes(max_bytes));
  // Each shard once, for its names and shapes (only one shard's data held at a time).
  for (int i = 0; i < (int)s->shards_.size(); ++i) {
    const std::unique_ptr<TensorSource> shard = open_shard(s->shards_[i]);
    if (i == 0) s->format_ = shard->formatName();
    for (const TensorInfo& t : shard->tensors()) {
      auto [it, added] = s->index_.emplace(t.name, s->tensors_.size());
      if (!added)
        throw Error(ErrorKind::DuplicateKey, index_path + ": the tensor \"" +
                                                 clipForMessage(t.name, 80) + "\" is in both " +
                                                 fileName(s->shards_[s->shard_of_[it->second]]) +
                                                 " and " + fileName(s->shards_[i]));
      s->tensors_.push_back(t);
      s->shard_of_.push_back(i);
    }
  }
  for (const auto& [name, shard] : placed) {
    auto it = s->index_.find(name);
    if (it == s->index_.end() || s->shard_of_[it->second] != shard)
      throw Error(ErrorKind::MissingTensor,
                  index_path + ": the index places \"" + clipForMessage(name, 80) + "\" in " +
                      fileName(s->shards_[shard]) + ", which does not hold it");
  }
  return s;
}

std::string ShardedSource::formatName() const {
  return format_ + " in " + std::to_string(shards_.size()) + " shards";
}

const TensorInfo* ShardedSource::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const TensorSource& ShardedSource::shard(int i) const {
  if (open_index_ != i) {
    open_shard_.reset();  // the previous shard's data goes before the next is read
    open_index_ = -1;
    open_shard_ = open_(shards_[i]);
    open_index_ = i;
  }
  return *open_shard_;
}

Tensor ShardedSource::toFloat(const TensorInfo& info) const {
  auto it = index_.find(info.name);
  if (it == index_.end())
    throw Error(ErrorKind::MissingTensor, path_ + ": no tensor \"" + info.name + "\"");
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string& file = shards_[shard_of_[it->second]];
  const TensorSource& s = shard(shard_of_[it->second]);
  const TensorInfo* t = s.find(info.name);
  if (!t)  // the file changed since the index was read
    throw Error(ErrorKind::MissingTensor,
                file + ": no tensor \"" + info.name + "\" any more (did the file change?)");
  return s.toFloat(*t);
}

}  // namespace attnviz
