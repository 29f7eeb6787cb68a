#include "cuda/device_query.h"

#include <cuda_runtime.h>

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

}  // namespace tl::cuda
