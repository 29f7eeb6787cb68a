#pragma once
// Failures of the CUDA backend, as one-line messages a user can act on. Plain C++ (no CUDA headers): the
// .cu files classify a cudaError_t and build the message here, so the wording is tested on the CPU.
#include <string>

#include "common/errors.h"

namespace tl::cuda {

// The computation cannot run on the GPU (no device, old driver, out of memory, kernel fault). A
// ResourceError: the CLI exits with 1, the GUI shows the message. Cancellation throws tl::Canceled.
struct CudaError : ResourceError {
  using ResourceError::ResourceError;
};

enum class CudaFailure { NoDevice, OldDriver, OutOfMemory, KernelFault, Other };

// `what`: the step that failed ("launching LsePartialKernel"); `cudaText`: the runtime's name and
// description of the error; versions as the runtime reports them (13000 = 13.0), 0 when unknown.
std::string cudaFailureMessage(CudaFailure kind, const std::string& what, const std::string& cudaText,
                               int driverVersion, int runtimeVersion);

// 13000 → "13.0"; 0 → "unknown".
std::string cudaVersionText(int version);

}  // namespace tl::cuda
