#include "model/cpu_fallback.h"

#include "compute/backends.h"

namespace attnviz {

bool ranOutOfDeviceMemory(const Error& e) {
  return e.kind() == ErrorKind::OutOfMemory;
}

std::string redoneOnCpuNote(const Error& e) {
  return std::string("the GPU ran out of memory (") + e.what() +
         "): this run was redone on the CPU";
}

std::shared_ptr<Model> cpuCopyOf(const Model& model, int threads) {
  std::shared_ptr<Backend> cpu = createBackend("cpu");
  if (threads > 0) cpu->setThreads(threads);
  return std::make_shared<Model>(model.loadedPtr(), std::move(cpu));
}

}  // namespace attnviz
