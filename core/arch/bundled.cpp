#include "arch/bundled.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace fs = std::filesystem;

namespace attnviz {

namespace {
std::string exeDir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.parent_path().string();
}
}  // namespace

std::vector<std::string> bundledModelDirs() {
  std::vector<std::string> dirs;
  if (const char* env = std::getenv("ATTNVIZ_MODELS"); env && *env) dirs.push_back(env);
  const std::string exe = exeDir();
  if (!exe.empty()) {
    dirs.push_back(exe + "/models");
    dirs.push_back(exe + "/../share/attnviz/models");
  }
#ifdef ATTNVIZ_SOURCE_MODELS_DIR
  dirs.push_back(ATTNVIZ_SOURCE_MODELS_DIR);
#endif
  return dirs;
}

std::vector<BundledModel> listBundledModels() {
  std::vector<BundledModel> out;
  for (const auto& dir : bundledModelDirs()) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<BundledModel> here;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".safetensors")
        here.push_back({e.path().stem().string(), e.path().string()});
    std::sort(here.begin(), here.end(),
              [](const auto& a, const auto& b) { return a.name < b.name; });
    for (auto& m : here)
      if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.name == m.name; }))
        out.push_back(std::move(m));
  }
  return out;
}

std::string resolveModelPath(const std::string& name) {
  std::error_code ec;
  if (fs::is_regular_file(name, ec)) return name;
  for (const auto& m : listBundledModels())
    if (m.name == name) return m.path;
  if (fs::is_directory(name, ec)) return name;  // a Hugging Face folder (loadModel reads it)
  std::string names;
  for (const auto& m : listBundledModels()) names += (names.empty() ? "" : ", ") + m.name;
  throw Error(ErrorKind::Io, "\"" + name +
                                 "\" is neither a model file or folder nor a bundled model" +
                                 (names.empty() ? std::string(" (no bundled models found)")
                                                : " (bundled: " + names + ")"));
}

}  // namespace attnviz
