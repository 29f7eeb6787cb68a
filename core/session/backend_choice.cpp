#include "session/backend_choice.h"

#include "common/errors.h"
#include "cuda/backend.h"

namespace tl {

BackendChoice chooseBackend(const Operator& op, DeviceChoice choice) {
  if (choice == DeviceChoice::Cpu) return {};
  const BackendInfo& info = backendInfo();
  if (!cudaKernelsBuilt() || info.cudaDevices == 0) {
    const std::string why = cudaKernelsBuilt() ? "no usable CUDA device (" + info.cudaStatus + ")"
                                               : std::string("this TransportLens was built without CUDA");
    if (choice == DeviceChoice::Cuda) throw ResourceError("device cuda: " + why + "; run on the CPU (device cpu)");
    return {Backend::Cpu, why};
  }
  if (const auto why = op.cudaUnsupported()) return {Backend::Cpu, *why + "; ran on the CPU"};
  return {Backend::Cuda, ""};
}

std::string deviceLabel(Backend backend) {
  if (backend != Backend::Cuda) return backendName(backend);
  return "cuda (" + backendInfo().cudaDeviceName + ")";
}

}  // namespace tl
