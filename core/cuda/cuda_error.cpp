#include "cuda/cuda_error.h"

namespace tl::cuda {

std::string cudaVersionText(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

std::string cudaFailureMessage(CudaFailure kind, const std::string& what, const std::string& cudaText,
                               int driverVersion, int runtimeVersion) {
  switch (kind) {
    case CudaFailure::NoDevice:
      return "no usable CUDA device (" + cudaText + ") while " + what +
             ": check the GPU with nvidia-smi, or use the CPU backend";
    case CudaFailure::OldDriver:
      return "the NVIDIA driver supports CUDA " + cudaVersionText(driverVersion) + " but this build needs CUDA " +
             cudaVersionText(runtimeVersion) + " (" + cudaText + "): update the NVIDIA driver, or use the CPU backend";
    case CudaFailure::OutOfMemory:
      return "CUDA out of memory while " + what + " (" + cudaText +
             "): use fewer heads, shorter sequences, or the fused output path instead of the dense plan";
    case CudaFailure::KernelFault:
      return "CUDA kernel fault while " + what + " (" + cudaText +
             "); the GPU context is unusable until TransportLens restarts: use the CPU backend and report this bug";
    case CudaFailure::Other:
      break;
  }
  return "CUDA error while " + what + " (" + cudaText + ")";
}

}  // namespace tl::cuda
