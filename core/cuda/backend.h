#pragma once
// Which compute backends this build and this machine offer. The CPU reference is always present;
// CUDA needs both a CUDA build (TL_CUDA) and a usable device at run time.
#include <string>

namespace tl {

struct BackendInfo {
  bool cudaBuilt = false;
  int cudaDevices = 0;
  std::string cudaStatus;  // e.g. "CUDA not built", "no CUDA device (insufficient driver)", "1 × NVIDIA H100"
};

const BackendInfo& backendInfo();  // queried once
std::string backendLabel();        // short text for status bars: "CPU (Eigen) · CUDA: <status>"

}  // namespace tl
