// Soft ESP on the GPU (esp_soft_cuda.h): request checks, then the run (esp_soft_run.h), the one translation
// unit that compiles its kernels.
#include "cuda/cuda_device.cuh"
#include "cuda/esp_soft_cuda.h"
#include "cuda/esp_soft_run.h"

namespace tl::cuda {

template class EspSoftRun<CudaDevice>;

EspSoftCudaResult espSoftCuda(const EspSoftProblem& problem, const SliceCoefficients& coefficients,
                              const std::function<bool()>& canceled) {
  validateEspSoftProblem(problem);
  CudaDevice device(0, false);  // outlives the run's buffers
  return runEspSoft(device, problem, coefficients, canceled);
}

}  // namespace tl::cuda
