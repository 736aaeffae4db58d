#include "cuda_status.h"

#include <algorithm>

#include "base/error.h"

namespace attnviz::cuda {

namespace {

std::string computeName(int capability) {  // 90 → "9.0"
  return std::to_string(capability / 10) + "." + std::to_string(capability % 10);
}

std::string deviceName(const DeviceFacts& facts) {
  return facts.device.empty() ? "device 0" : facts.device;
}

}  // namespace

std::string cudaVersionString(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

bool isKernelFault(cudaError_t error) {
  switch (error) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchTimeout:
    case cudaErrorAssert:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorLaunchFailure:
    case cudaErrorContained:
    case cudaErrorTensorMemoryLeak:
      return true;
    default:
      return false;
  }
}

bool isStickyError(cudaError_t error) {
  if (isKernelFault(error)) return true;
  switch (error) {
    case cudaErrorECCUncorrectable:
    case cudaErrorMpsClientTerminated:
    case cudaErrorExternalDevice:
    case cudaErrorContextIsDestroyed:
    case cudaErrorCudartUnloading:
      return true;
    default:
      return false;
  }
}

std::string unavailableReason(cudaError_t error, const std::string& call,
                              const std::string& error_text, const DeviceFacts& facts) {
  const std::string cause = " (" + call + ": " + error_text + ")";
  const std::string needs = "this build needs a driver for CUDA " +
                            cudaVersionString(facts.runtime_version) + " or newer";
  switch (error) {
    case cudaErrorInsufficientDriver:
    case cudaErrorCallRequiresNewerDriver:
      if (facts.driver_version == 0)
        return "no NVIDIA driver is installed (libcuda.so.1 was not found)" + cause;
      return "the NVIDIA driver is too old: it supports CUDA " +
             cudaVersionString(facts.driver_version) + ", " + needs + cause;
    case cudaErrorStubLibrary:
      return "the libcuda.so found is the CUDA toolkit's stub, not the NVIDIA driver (remove the "
             "toolkit's lib64/stubs folder from LD_LIBRARY_PATH)" +
             cause;
    case cudaErrorSystemDriverMismatch:
      return "the NVIDIA kernel module and the driver library (libcuda) are of different "
             "versions; reboot after a driver update, or reinstall the driver" +
             cause;
    case cudaErrorCompatNotSupportedOnDevice:
      return "the CUDA forward-compatibility driver in use does not support " + deviceName(facts) +
             "; use the system's NVIDIA driver" + cause;
    case cudaErrorSystemNotReady:
      return "the system's GPUs are not ready (on NVSwitch systems: is the fabric manager "
             "running?)" +
             cause;
    case cudaErrorNoDevice:
      if (facts.visible_devices_set)
        return "no CUDA device is visible: CUDA_VISIBLE_DEVICES=\"" + facts.visible_devices +
               "\" hides every GPU" + cause;
      return "no CUDA device found" + cause;
    case cudaErrorInvalidDevice:
      return "device 0 is not a usable CUDA device" + cause;
    case cudaErrorDevicesUnavailable:
      return deviceName(facts) +
             " is busy or unavailable: its compute mode is exclusive-process and another "
             "process holds it, or it is prohibited (nvidia-smi -q -d COMPUTE shows the mode)" +
             cause;
    case cudaErrorMemoryAllocation:
      return "out of GPU memory while creating the CUDA context on " + deviceName(facts) +
             ": other processes hold the device's memory (nvidia-smi lists them)" + cause;
    case cudaErrorDeviceNotLicensed:
      return deviceName(facts) + " is a virtual GPU without a valid license" + cause;
    case cudaErrorInitializationError:
      return "the CUDA driver failed to initialise (nvidia-smi and the kernel log may say why)" +
             cause;
    case cudaErrorNoKernelImageForDevice:
    case cudaErrorInvalidKernelImage:
    case cudaErrorInvalidSource:
      return deviceName(facts) + " cannot run this build's kernels (built for CUDA architectures " +
             facts.architectures +
             (facts.compute_capability > 0 ? "; rebuild with -DCMAKE_CUDA_ARCHITECTURES=" +
                                                 std::to_string(facts.compute_capability) + "-real"
                                           : std::string()) +
             ")" + cause;
    case cudaErrorUnsupportedPtxVersion:
    case cudaErrorInvalidPtx:
    case cudaErrorJitCompilerNotFound:
      return "the NVIDIA driver cannot compile this build's PTX for " + deviceName(facts) +
             (facts.compute_capability > 0
                  ? " (no machine code for compute " + computeName(facts.compute_capability) +
                        " in this build)"
                  : std::string()) +
             ": the driver (CUDA " + cudaVersionString(facts.driver_version) +
             ") is older than the toolkit that built attnviz (CUDA " +
             cudaVersionString(facts.runtime_version) +
             "); update the driver, or rebuild with this GPU in CMAKE_CUDA_ARCHITECTURES" + cause;
    case cudaErrorOperatingSystem:
      return "the operating system refused the CUDA driver's request" + cause;
    default:
      break;
  }
  if (isStickyError(error)) return deviceName(facts) + " reported a fatal error" + cause;
  return "CUDA cannot use " + deviceName(facts) + cause;
}

std::string prohibitedReason(const DeviceFacts& facts) {
  return deviceName(facts) +
         " is in the \"prohibited\" compute mode: no process may use it (nvidia-smi -q -d "
         "COMPUTE shows the mode)";
}

std::string opErrorMessage(const std::string& op, const std::string& error_message, bool sticky,
                           bool kernel_fault, bool synchronised) {
  std::string m = "CUDA " + op + ": " + error_message;
  if (!sticky) return m;
  if (kernel_fault) {
    if (synchronised)
      m += ". " + op + " faulted on the GPU (ATTNVIZ_CUDA_SYNC=1: the backend waited after it)";
    else
      m += ". The fault may come from GPU work queued before " + op +
           ": run with ATTNVIZ_CUDA_SYNC=1 to name the op that faulted";
  }
  m += ". The GPU's CUDA context is lost: the CUDA backend cannot be used again until attnviz "
       "restarts; use the CPU backend";
  return m;
}

std::string outOfMemoryMessage(size_t bytes, const MemoryFacts& facts) {
  std::string m = "out of GPU memory: cannot allocate " + formatBytes(bytes);
  std::string detail;
  if (facts.known)
    detail = formatBytes(facts.free_bytes) + " free of " + formatBytes(facts.total_bytes);
  if (facts.pooled) {
    if (!detail.empty()) detail += "; ";
    detail += "attnviz holds " + formatBytes(facts.pool_reserved) + " in its pool, " +
              formatBytes(facts.pool_reserved - std::min(facts.pool_used, facts.pool_reserved)) +
              " of it cached";
    if (facts.released > 0)
      detail +=
          ", after giving " + formatBytes(facts.released) + " of cache back before a second try";
  }
  if (!detail.empty()) m += " (" + detail + ")";
  return m + kOutOfDeviceMemoryAdvice;
}

}  // namespace attnviz::cuda
