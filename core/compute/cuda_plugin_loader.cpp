#include "compute/cuda_plugin_loader.h"

#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

#ifndef ATTNVIZ_BUILD_ID
#error "ATTNVIZ_BUILD_ID must be defined by the build (gpu/CMakeLists.txt)"
#endif
#ifndef ATTNVIZ_CUDA_PLUGIN_INSTALL_SUBDIR
#define ATTNVIZ_CUDA_PLUGIN_INSTALL_SUBDIR "../lib/attnviz"
#endif

namespace attnviz::cuda {

namespace {

std::string executableDir() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

// "the CUDA 13 runtime and cuBLAS (libcudart.so.13, libcublas.so.13, libcublasLt.so.13)"
std::string cudaLibraries() {
#ifdef ATTNVIZ_CUDA_MAJOR
  const std::string v = std::to_string(ATTNVIZ_CUDA_MAJOR);
  return "the CUDA " + v + " runtime and cuBLAS (libcudart.so." + v + ", libcublas.so." + v +
         ", libcublasLt.so." + v + ")";
#else
  return "the CUDA runtime and cuBLAS";
#endif
}

std::string join(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

LoadedPlugin load() {
  LoadedPlugin p;
  const std::vector<std::string> candidates = pluginCandidates(executableDir());
  for (const std::string& c : candidates) {
    std::error_code ec;
    if (std::filesystem::exists(c, ec)) {
      p.path = c;
      break;
    }
  }
  if (p.path.empty()) {
    p.error = "the CUDA plugin " ATTNVIZ_CUDA_PLUGIN_FILE " was not found (looked for " +
              join(candidates) + ")";
    return p;
  }
  // RTLD_NOW: a missing CUDA library or symbol shows here, not at the first call.
  void* handle = dlopen(p.path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    p.error = "cannot load the CUDA plugin " + p.path + ": " + (why ? why : "unknown error") +
              " (it needs " + cudaLibraries() +
              " installed and on the library path, and an NVIDIA driver to use a GPU)";
    return p;
  }
  using BuildId = const char* (*)();
  using Api = const PluginApi* (*)();
  auto build_id = reinterpret_cast<BuildId>(dlsym(handle, "attnviz_cuda_plugin_build_id"));
  auto api = reinterpret_cast<Api>(dlsym(handle, "attnviz_cuda_plugin_api"));
  if (!build_id || !api) {
    p.error = p.path + " is not an attnviz CUDA plugin (it lacks attnviz_cuda_plugin_build_id)";
    dlclose(handle);
    return p;
  }
  const std::string id = build_id();
  if (id != ATTNVIZ_BUILD_ID) {
    p.error = "the CUDA plugin " + p.path + " comes from another attnviz build (build id " + id +
              ", this program's " ATTNVIZ_BUILD_ID "); install the two together";
    dlclose(handle);
    return p;
  }
  p.api = api();  // the handle stays open: backends it makes may live until exit
  if (!p.api) p.error = p.path + " returned no plugin interface";
  return p;
}

}  // namespace

std::vector<std::string> pluginCandidates(const std::string& exe_dir) {
  if (const char* forced = std::getenv("ATTNVIZ_CUDA_PLUGIN"); forced && *forced) return {forced};
  std::vector<std::string> c;
  if (!exe_dir.empty()) {
    c.push_back(exe_dir + "/" ATTNVIZ_CUDA_PLUGIN_FILE);
    c.push_back(exe_dir + "/" ATTNVIZ_CUDA_PLUGIN_INSTALL_SUBDIR "/" ATTNVIZ_CUDA_PLUGIN_FILE);
  }
#ifdef ATTNVIZ_CUDA_PLUGIN_BUILD_PATH
  c.push_back(ATTNVIZ_CUDA_PLUGIN_BUILD_PATH);
#endif
  return c;
}

const LoadedPlugin& loadPlugin() {
  static const LoadedPlugin plugin = load();  // thread-safe initialisation
  return plugin;
}

}  // namespace attnviz::cuda
