#include "cuda/device_query.h"

#include <cuda_runtime.h>

#include <cstdio>

#include "cuda/cuda_error.h"

namespace tl::cuda {

int deviceCount(std::string& status) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  // With no driver installed the runtime reports cudaErrorInsufficientDriver: that simply means "no GPU".
  if (err == cudaErrorInsufficientDriver || err == cudaErrorNoDevice) {
    status = "no GPU";
    return 0;
  }
  if (err != cudaSuccess) {
    status = std::string("no usable GPU (") + cudaGetErrorString(err) + ")";
    return 0;
  }
  if (count == 0) {
    status = "no CUDA device";
    return 0;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  status = std::to_string(count) + " x " + prop.name;
  return count;
}

DeviceInfo deviceInfo(int device) {
  DeviceInfo info;
  cudaDriverGetVersion(&info.driverVersion);
  cudaRuntimeGetVersion(&info.runtimeVersion);
  std::string status;
  const int count = deviceCount(status);
  if (count == 0 || device < 0 || device >= count) {
    info.status = count == 0 ? status : "no CUDA device " + std::to_string(device);
    return info;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    info.status = "device properties unavailable";
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.status = prop.name;
  info.computeMajor = prop.major;
  info.computeMinor = prop.minor;
  info.smCount = prop.multiProcessorCount;
  info.totalBytes = double(prop.totalGlobalMem);
  info.l2Bytes = prop.l2CacheSize;
  info.sharedPerBlockOptin = int(prop.sharedMemPerBlockOptin);
  info.memoryBusWidth = prop.memoryBusWidth;
  // Clocks are attributes since CUDA 13 removed them from cudaDeviceProp; a failure leaves 0.
  if (cudaDeviceGetAttribute(&info.clockKHz, cudaDevAttrClockRate, device) != cudaSuccess) info.clockKHz = 0;
  if (cudaDeviceGetAttribute(&info.memoryClockKHz, cudaDevAttrMemoryClockRate, device) != cudaSuccess)
    info.memoryClockKHz = 0;
  int previous = 0;
  size_t free = 0, total = 0;
  if (cudaGetDevice(&previous) == cudaSuccess && cudaSetDevice(device) == cudaSuccess &&
      cudaMemGetInfo(&free, &total) == cudaSuccess)
    info.freeBytes = double(free);
  cudaSetDevice(previous);
  cudaGetLastError();  // a failed query above must not linger as the "last error"
  return info;
}

std::string DeviceInfo::toJson() const {
  std::string quoted = "\"";
  for (char c : status) quoted += (c == '"' || c == '\\') ? '_' : c;
  quoted += "\"";
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"available\": %s, \"name\": %s, \"compute_capability\": \"%d.%d\", \"sm_count\": %d, "
                "\"total_gib\": %.2f, \"free_gib\": %.2f, \"driver\": \"%s\", \"runtime\": \"%s\", "
                "\"clock_mhz\": %d, \"memory_clock_mhz\": %d, \"memory_bus_bits\": %d, \"l2_mib\": %.1f, "
                "\"shared_per_block_optin_kib\": %d}",
                available ? "true" : "false", quoted.c_str(), computeMajor, computeMinor, smCount,
                totalBytes / (1 << 30), freeBytes / (1 << 30), cudaVersionText(driverVersion).c_str(),
                cudaVersionText(runtimeVersion).c_str(), clockKHz / 1000, memoryClockKHz / 1000, memoryBusWidth,
                double(l2Bytes) / (1 << 20), sharedPerBlockOptin / 1024);
  return buf;
}

}  // namespace tl::cuda
