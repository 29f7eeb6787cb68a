#pragma once
// esp_run.h's sortSegments on the GPU (defined in esp.cu with CUB's segmented radix sort): declared for every
// translation unit that instantiates an ESP run on CudaDevice.
#include "cuda/cuda_device.cuh"

namespace tl::cuda {

// Sorts each of `segments` consecutive runs of `length` keys ascending, stably, with their values.
void sortSegments(CudaDevice& dev, const DeviceBuffer<float>& keysIn, DeviceBuffer<float>& keysOut,
                  const DeviceBuffer<int>& valuesIn, DeviceBuffer<int>& valuesOut, int segments, int length);

}  // namespace tl::cuda
