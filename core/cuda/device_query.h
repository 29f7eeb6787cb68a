#pragma once
// Plain C++ face of the CUDA runtime query (implemented in device_query.cu; only built with TL_CUDA).
#include <string>

namespace tl::cuda {

// Number of usable devices; 0 with `status` set when there is no driver or device.
int deviceCount(std::string& status);

// What benchmarks and the status bar show about a device. Never throws: without a usable device,
// available = false and status says why.
struct DeviceInfo {
  bool available = false;
  std::string status;  // "NVIDIA H100 80GB HBM3", or why there is none
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int smCount = 0;
  double totalBytes = 0, freeBytes = 0;
  int driverVersion = 0, runtimeVersion = 0;  // 13000 = CUDA 13.0
  int clockKHz = 0, memoryClockKHz = 0, memoryBusWidth = 0;  // 0 when the device does not say
  long long l2Bytes = 0;
  int sharedPerBlockOptin = 0;

  std::string toJson() const;  // one JSON object
};

DeviceInfo deviceInfo(int device = 0);

}  // namespace tl::cuda
