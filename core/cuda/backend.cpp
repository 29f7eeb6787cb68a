#include "cuda/backend.h"

#include <cstdio>

#ifdef TL_HAVE_CUDA
#include "cuda/device_query.h"
#endif

namespace tl {

const BackendInfo& backendInfo() {
  static const BackendInfo info = [] {
    BackendInfo b;
#ifdef TL_HAVE_CUDA
    b.cudaBuilt = true;
    b.cudaDevices = cuda::deviceCount(b.cudaStatus);
    if (b.cudaDevices > 0) {
      const cuda::DeviceInfo device = cuda::deviceInfo(0);
      b.cudaDeviceName = device.name;
      b.cudaMemoryGiB = device.totalBytes / double(1ull << 30);
    }
#else
    b.cudaStatus = "CUDA not built";
#endif
    return b;
  }();
  return info;
}

std::string backendLabel() {
  const BackendInfo& b = backendInfo();
  if (b.cudaDevices == 0) return "CPU (Eigen) · CUDA: " + b.cudaStatus;
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB", b.cudaMemoryGiB);
  return "CPU (Eigen) · CUDA: " + b.cudaDeviceName + ", " + memory;
}

}  // namespace tl
