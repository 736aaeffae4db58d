// Bundled models: finding resources/models on disk (next to the executable, in the source tree,
// or under $ATTNVIZ_MODELS) and resolving a model name such as "reorder" to its file.
#pragma once

#include <string>
#include <vector>

namespace attnviz {

struct BundledModel {
  std::string name;  // file stem, e.g. "reorder"
  std::string path;  // .safetensors path
};

// Directories searched, in order.
std::vector<std::string> bundledModelDirs();
std::vector<BundledModel> listBundledModels();
// A path to an existing file is returned as is; otherwise a bundled name is resolved; otherwise a
// folder (a Hugging Face model folder) is returned as is.
// Throws Error(Io) listing the bundled names when neither exists.
std::string resolveModelPath(const std::string& name_or_path);

constexpr const char* kDefaultModel = "reorder";

}  // namespace attnviz
