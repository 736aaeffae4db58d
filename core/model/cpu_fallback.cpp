#include "model/cpu_fallback.h"

#include "compute/backends.h"

namespace attnviz {

bool ranOutOfDeviceMemory(const Error& e) {
  return e.kind() == ErrorKind::OutOfMemory;
}

std::string redoneOnCpuNote(const Error& e) {
  // The advice to use the CPU backend is moot: that is what happened.
  std::string what = e.what();
  const std::string advice = kOutOfDeviceMemoryAdvice;
  if (what.size() >= advice.size() &&
      what.compare(what.size() - advice.size(), advice.size(), advice) == 0)
    what.erase(what.size() - advice.size());
  return "the GPU ran out of memory (" + what + "): this run was redone on the CPU";
}

bool deviceLost(const Model& model) {
  return !model.backend().healthy();
}

std::string lostDeviceNote(const Model& model, const Error& e) {
  // The error of this run, or (when the run met a backend already lost) the first fault.
  std::string what = e.kind() == ErrorKind::Backend ? e.what() : model.backend().failure();
  return "the GPU failed (" + what + "): this run was redone on the CPU";
}

std::shared_ptr<Model> cpuCopyOf(const Model& model, int threads) {
  std::shared_ptr<Backend> cpu = createBackend("cpu");
  if (threads > 0) cpu->setThreads(threads);
  return std::make_shared<Model>(model.loadedPtr(), std::move(cpu));
}

}  // namespace attnviz
