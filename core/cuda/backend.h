#pragma once
// Which compute backends this build and this machine offer. The CPU reference is always present;
// CUDA needs both a CUDA build (TL_CUDA) and a usable device at run time.
#include <string>

namespace tl {

struct BackendInfo {
  bool cudaBuilt = false;
  int cudaDevices = 0;
  std::string cudaStatus;  // e.g. "CUDA not built", "no CUDA device (insufficient driver)", "1 × NVIDIA H100"
  std::string cudaDeviceName;  // device 0, when there is one
  double cudaMemoryGiB = 0;    // its total memory
};

const BackendInfo& backendInfo();  // queried once
// Short text for status bars: "CPU (Eigen) · CUDA: <status>", or with a device "... · CUDA: NVIDIA H200,
// 139.8 GiB".
std::string backendLabel();

}  // namespace tl
