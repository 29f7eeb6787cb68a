#include "cuda/backend.h"

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
#else
    b.cudaStatus = "CUDA not built";
#endif
    return b;
  }();
  return info;
}

std::string backendLabel() { return "CPU (Eigen) · CUDA: " + backendInfo().cudaStatus; }

}  // namespace tl
