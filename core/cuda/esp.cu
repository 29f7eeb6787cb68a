// Hard ESP attention on the GPU (esp_cuda.h): the request check, CUB's segmented radix sort as the run's
// sortSegments, and the run (esp_run.h), the one translation unit that compiles the ESP kernels.
#include <cub/device/device_segmented_radix_sort.cuh>

#include <vector>

#include "cuda/esp_run.h"
#include "cuda/segmented_sort.cuh"

namespace tl::cuda {

// DeviceSegmentedRadixSort is stable and treats −0 and +0 as equal, so equal
// projections keep the token order the identity values give them, as the CPU's stable sort does.
void sortSegments(CudaDevice& dev, const DeviceBuffer<float>& keysIn, DeviceBuffer<float>& keysOut,
                  const DeviceBuffer<int>& valuesIn, DeviceBuffer<int>& valuesOut, int segments, int length) {
  std::vector<int> offsets(size_t(segments) + 1);
  for (size_t s = 0; s < offsets.size(); ++s) offsets[s] = int(s) * length;
  DeviceBuffer<int> bounds = dev.alloc<int>(offsets.size(), "sort segment offsets");
  dev.upload(bounds, offsets.data(), offsets.size());
  const int items = segments * length;
  size_t workspaceBytes = 0;
  checkCuda(cub::DeviceSegmentedRadixSort::SortPairs(nullptr, workspaceBytes, keysIn.data(), keysOut.data(),
                                                      valuesIn.data(), valuesOut.data(), items, segments,
                                                      bounds.data(), bounds.data() + 1, 0, 32, dev.stream()),
            "sizing the segmented sort");
  DeviceBuffer<char> workspace = dev.alloc<char>(workspaceBytes, "sort workspace");
  checkCuda(cub::DeviceSegmentedRadixSort::SortPairs(workspace.data(), workspaceBytes, keysIn.data(),
                                                      keysOut.data(), valuesIn.data(), valuesOut.data(), items,
                                                      segments, bounds.data(), bounds.data() + 1, 0, 32,
                                                      dev.stream()),
            "running the segmented sort");
}

template class EspRun<CudaDevice>;

EspCudaResult espCuda(const EspCudaProblem& problem, const EspCudaOptions& options) {
  validateEspProblem(problem, options);
  CudaDevice device(options.device, options.syncEachKernel);  // outlives the run's buffers
  return runEsp(device, problem, options);
}

}  // namespace tl::cuda
