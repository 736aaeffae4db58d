// What CUDA's error codes mean for attnviz, as pure functions of the code and of facts gathered
// beforehand (no CUDA calls): why a device cannot be used, whether an error has lost the CUDA
// context, and the messages for both and for running out of memory. tests/test_cuda_status.cpp
// checks every branch without a GPU.
#pragma once

#include <driver_types.h>

#include <cstddef>
#include <string>

namespace attnviz::cuda {

// "13.0" for 13000 (the encoding of cudaDriverGetVersion and cudaRuntimeGetVersion).
std::string cudaVersionString(int version);

// True for the errors after which the process's CUDA context is unusable and every later CUDA
// call fails the same way until the process restarts (CUDA's documentation: "any further CUDA
// work will return the same error"): faults inside a kernel (illegal or misaligned address,
// illegal instruction, device-side assert, ...), a launch timeout, an uncorrectable ECC error, a
// lost device or a terminated MPS client.
bool isStickyError(cudaError_t error);

// True for the sticky errors that a kernel raises while it runs: the call that reports one may
// only be the first to notice a fault of work queued before it.
bool isKernelFault(cudaError_t error);

// What deviceUnavailableReason knew when a call failed.
struct DeviceFacts {
  int driver_version = 0;      // cudaDriverGetVersion; 0 = no driver (libcuda.so.1) found
  int runtime_version = 0;     // cudaRuntimeGetVersion of the runtime attnviz was built with
  std::string device;          // "NVIDIA H100 80GB HBM3 (compute 9.0)"; empty when unknown
  int compute_capability = 0;  // 90 for compute 9.0; 0 when unknown
  std::string architectures;   // this build's CUDA architectures, "75-real ... 75-virtual"
  bool visible_devices_set = false;
  std::string visible_devices;  // $CUDA_VISIBLE_DEVICES when set
};

// Why CUDA cannot be used, for "CUDA backend unavailable: <reason>", when `call` (what was
// being done, e.g. "cudaGetDeviceCount" or "creating the CUDA context on device 0") failed with
// `error`; `error_text` ("out of memory (cudaErrorMemoryAllocation)") is appended in brackets.
// Distinguishes: no driver, a driver too old, the toolkit's stub libcuda, a kernel module that
// does not match the driver library, no device (or CUDA_VISIBLE_DEVICES hiding them), devices
// busy or in exclusive-process / prohibited compute mode, out of memory while creating the
// context, no kernel image for this GPU, PTX the driver cannot compile.
std::string unavailableReason(cudaError_t error, const std::string& call,
                              const std::string& error_text, const DeviceFacts& facts);

// The reason when device 0's compute mode is "prohibited" (no process may use it).
std::string prohibitedReason(const DeviceFacts& facts);

// The message of an error raised while the backend ran `op`. `sticky`: the CUDA context is lost
// (the message says the backend is unusable until restart and to use the CPU); `synchronised`:
// ATTNVIZ_CUDA_SYNC=1 made the backend wait after every op, so `op` itself faulted; otherwise a
// kernel fault may come from earlier queued work and the message says how to find the op.
std::string opErrorMessage(const std::string& op, const std::string& error_message, bool sticky,
                           bool kernel_fault, bool synchronised);

// The message of an allocation that failed even after the pool's cache was released:
// "out of GPU memory: cannot allocate 2.0 GiB (1.0 GiB free of 80.0 GiB; attnviz holds 70.0 GiB
// in its pool, 3.0 GiB of it cached and released before a second try)". Pool figures are left
// out when `pooled` is false.
struct MemoryFacts {
  bool known = false;  // free/total could be read
  size_t free_bytes = 0, total_bytes = 0;
  bool pooled = false;
  size_t pool_reserved = 0;  // device memory the pool holds (used + cached)
  size_t pool_used = 0;      // of which handed out to live buffers
  size_t released = 0;       // cached memory given back before the second try
};
std::string outOfMemoryMessage(size_t bytes, const MemoryFacts& facts);

}  // namespace attnviz::cuda
