// Finding and loading the CUDA plugin (cuda_plugin.h) once per process. Plain C++ with dlopen; no
// CUDA headers or libraries, so every program links it whether or not CUDA is installed.
#pragma once

#include <string>
#include <vector>

#include "compute/cuda_plugin.h"

namespace attnviz::cuda {

struct LoadedPlugin {
  const PluginApi* api = nullptr;  // nullptr when the plugin could not be loaded
  std::string path;                // the file loaded, or tried last
  std::string error;               // why api is nullptr, for "CUDA backend unavailable: ..."
};

// Where the plugin is looked for, in order: $ATTNVIZ_CUDA_PLUGIN alone when it is set; else next
// to the executable (`exe_dir`), then in `exe_dir`/../lib/attnviz (the install layout, libdir
// as configured), then where this build made it (the build tree).
std::vector<std::string> pluginCandidates(const std::string& exe_dir);

// Loads the first candidate that exists, checks its build id, and keeps it loaded for the rest of
// the process (backends it made may live until exit). Loaded once; thread-safe; never throws.
const LoadedPlugin& loadPlugin();

}  // namespace attnviz::cuda
