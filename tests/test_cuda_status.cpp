// The CUDA backend's error classification and messages (gpu/cuda_status.h) without a GPU: pure
// functions of error codes, so every branch is checked here. Plain program (no Qt, no libcudart).
#include <cstdio>
#include <string>

#include "cuda_status.h"

using namespace attnviz::cuda;

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string& what, const std::string& got = {}) {
  ++(ok ? passed : failed);
  if (!ok) std::printf("FAIL %s%s%s\n", what.c_str(), got.empty() ? "" : ": ", got.c_str());
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Every listed part appears in the reason for `error`, and so do the call and the error text.
void reasonHas(cudaError_t error, const DeviceFacts& facts,
               std::initializer_list<const char*> parts) {
  const std::string r = unavailableReason(error, "the call", "the error (cudaErrorX)", facts);
  bool ok = has(r, "(the call: the error (cudaErrorX))");
  for (const char* p : parts) ok = ok && has(r, p);
  check(ok, "unavailableReason(" + std::to_string(int(error)) + ")", r);
}

}  // namespace

int main() {
  check(cudaVersionString(13000) == "13.0", "cudaVersionString(13000)", cudaVersionString(13000));
  check(cudaVersionString(12080) == "12.8", "cudaVersionString(12080)", cudaVersionString(12080));

  // Sticky errors: kernel faults and lost devices; out of memory and bad arguments are not.
  for (cudaError_t e : {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorMisalignedAddress,
                        cudaErrorAssert, cudaErrorIllegalInstruction, cudaErrorLaunchTimeout}) {
    check(isStickyError(e), "sticky " + std::to_string(int(e)));
    check(isKernelFault(e), "kernel fault " + std::to_string(int(e)));
  }
  check(isStickyError(cudaErrorECCUncorrectable) && !isKernelFault(cudaErrorECCUncorrectable),
        "an uncorrectable ECC error is sticky but not a kernel's fault");
  for (cudaError_t e : {cudaSuccess, cudaErrorMemoryAllocation, cudaErrorInvalidValue,
                        cudaErrorNotReady, cudaErrorNoKernelImageForDevice})
    check(!isStickyError(e), "not sticky " + std::to_string(int(e)));

  DeviceFacts facts;
  facts.runtime_version = 13000;
  facts.architectures = "75-real 90-real 75-virtual";
  reasonHas(cudaErrorInsufficientDriver, facts, {"no NVIDIA driver"});
  facts.driver_version = 12040;
  reasonHas(cudaErrorInsufficientDriver, facts, {"too old", "CUDA 12.4", "CUDA 13.0"});
  reasonHas(cudaErrorCallRequiresNewerDriver, facts, {"too old"});
  reasonHas(cudaErrorStubLibrary, facts, {"stub", "LD_LIBRARY_PATH"});
  reasonHas(cudaErrorSystemDriverMismatch, facts, {"kernel module"});
  reasonHas(cudaErrorNoDevice, facts, {"no CUDA device found"});
  facts.visible_devices_set = true;
  reasonHas(cudaErrorNoDevice, facts, {"CUDA_VISIBLE_DEVICES=\"\""});
  facts.device = "NVIDIA H100 80GB HBM3 (compute 9.0)";
  facts.compute_capability = 90;
  reasonHas(cudaErrorDevicesUnavailable, facts, {"NVIDIA H100", "exclusive-process"});
  reasonHas(cudaErrorMemoryAllocation, facts, {"out of GPU memory", "creating the CUDA context"});
  facts.compute_capability = 120;
  reasonHas(cudaErrorNoKernelImageForDevice, facts,
            {"cannot run this build's kernels", "75-real 90-real 75-virtual",
             "-DCMAKE_CUDA_ARCHITECTURES=120-real"});
  reasonHas(cudaErrorUnsupportedPtxVersion, facts, {"cannot compile", "compute 12.0", "older"});
  reasonHas(cudaErrorIllegalAddress, facts, {"fatal error"});
  reasonHas(cudaErrorUnknown, facts, {"CUDA cannot use NVIDIA H100"});
  check(has(prohibitedReason(facts), "prohibited"), "prohibitedReason", prohibitedReason(facts));

  // Errors while running an op.
  const std::string lost = opErrorMessage("masked_softmax_forward", "x failed", true, true, false);
  check(has(lost, "CUDA masked_softmax_forward: x failed") && has(lost, "ATTNVIZ_CUDA_SYNC=1") &&
            has(lost, "until attnviz restarts") && has(lost, "CPU backend"),
        "a sticky kernel fault without ATTNVIZ_CUDA_SYNC", lost);
  const std::string named = opErrorMessage("linear_forward", "x failed", true, true, true);
  check(has(named, "linear_forward faulted on the GPU") && has(named, "restarts"),
        "a sticky kernel fault under ATTNVIZ_CUDA_SYNC=1", named);
  const std::string plain = opErrorMessage("allocate", "out of GPU memory", false, false, false);
  check(plain == "CUDA allocate: out of GPU memory", "a recoverable error", plain);

  MemoryFacts memory;
  memory.known = true;
  memory.free_bytes = size_t{1} << 30;
  memory.total_bytes = size_t{80} << 30;
  memory.pooled = true;
  memory.pool_reserved = size_t{70} << 30;
  memory.pool_used = size_t{67} << 30;
  memory.released = size_t{2} << 30;
  const std::string oom = outOfMemoryMessage(size_t{2} << 30, memory);
  check(has(oom, "cannot allocate 2.0 GiB") && has(oom, "1.0 GiB free of 80.0 GiB") &&
            has(oom, "holds 70.0 GiB") && has(oom, "3.0 GiB of it cached") &&
            has(oom, "giving 2.0 GiB of cache back"),
        "outOfMemoryMessage", oom);

  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
