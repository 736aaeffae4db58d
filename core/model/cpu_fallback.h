// A request that runs out of GPU memory, or whose GPU fails for good, redone on the CPU. A pass
// whose trace fits in the host's memory may not fit in the GPU's (long inputs, a large batch):
// rather than ending with the backend's error, the same request runs again on the CPU backend,
// with the same weights, and the user is told. The GPU backend stays usable after running out of
// memory (not a lost context): the caller keeps its model there for later requests, which may fit.
// After a fatal fault (a lost CUDA context: Backend::failure() is set) nothing runs there again:
// the caller moves its model to the CPU copy (deviceLost tells it). attnviz-cli's run and decode
// (app/cli/cli_common.h runOnModel) and the GUI's engine jobs (app/gui/session/engine.cpp) use it.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "base/error.h"
#include "model/model.h"

namespace attnviz {

// True when `e` says a backend ran out of memory (ErrorKind::OutOfMemory, which only device
// backends throw; the CPU backend's host memory is bounded by the size checks before a pass).
bool ranOutOfDeviceMemory(const Error& e);

// What the user is told: "the GPU ran out of memory (<the backend's message>): this run was redone
// on the CPU".
std::string redoneOnCpuNote(const Error& e);

// True when `model`'s backend has failed for good (Backend::failure(): a lost CUDA context).
bool deviceLost(const Model& model);

// What the user is told then: "the GPU failed (<the backend's message>): this run was redone on the
// CPU".
std::string lostDeviceNote(const Model& model, const Error& e);

// The same model on a new CPU backend with `threads` threads (0: one per core), from the host
// weights the model was built from (Model::loadedPtr(): read once, never again from the file). A
// model whose weights were changed on the device since (a Trainer's) is not what this copies.
std::shared_ptr<Model> cpuCopyOf(const Model& model, int threads = 0);

// Runs request(model) and returns its result. When it throws Error(OutOfMemory) (only a device
// backend does), or any error after which deviceLost(*model), the request is run once more on
// cpuCopyOf(*model, cpu_threads) and *note says so (redoneOnCpuNote, lostDeviceNote); otherwise
// *note is left empty. The request gets the model as a shared
// pointer so that what it returns may keep the CPU copy alive (a decoding session on it). Other
// errors, and any error of the CPU run, reach the caller.
template <class Request>
auto runRedoingOnCpu(const std::shared_ptr<Model>& model, int cpu_threads, std::string* note,
                     Request&& request) -> decltype(request(model)) {
  note->clear();
  try {
    return request(model);
  } catch (const Error& e) {
    if (ranOutOfDeviceMemory(e))
      *note = redoneOnCpuNote(e);
    else if (deviceLost(*model))
      *note = lostDeviceNote(*model, e);
    else
      throw;
  }
  // Outside the handler: the failed run's device buffers are freed by now.
  return request(cpuCopyOf(*model, cpu_threads));
}

}  // namespace attnviz
