#include "ops/backend.h"

#include "common/errors.h"

namespace tl {

const char* backendName(Backend backend) {
  switch (backend) {
    case Backend::Cpu: return "cpu";
    case Backend::Cuda: return "cuda";
    case Backend::Torch: return "torch";
  }
  return "cpu";
}

const char* deviceChoiceName(DeviceChoice choice) {
  switch (choice) {
    case DeviceChoice::Cpu: return "cpu";
    case DeviceChoice::Cuda: return "cuda";
    case DeviceChoice::Auto: return "auto";
  }
  return "cpu";
}

DeviceChoice parseDeviceChoice(const std::string& text) {
  for (DeviceChoice c : {DeviceChoice::Cpu, DeviceChoice::Cuda, DeviceChoice::Auto})
    if (text == deviceChoiceName(c)) return c;
  throw InvalidArgument("device '" + text + "' is not one of cpu, cuda, auto");
}

bool cudaKernelsBuilt() {
#ifdef TL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

}  // namespace tl
