// The dense run (dense_run.h) on the GPU: the one translation unit that compiles its kernels.
#include <chrono>

#include "cuda/cuda_device.cuh"
#include "cuda/dense_run.h"

namespace tl::cuda {

template class DenseRun<CudaDevice>;

CudaAttentionResult runDenseCuda(const AttentionProblem& problem, const DenseRunSpec& spec, const CudaOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CudaDevice device(options.device, options.syncEachKernel);  // outlives the run's buffers
  CudaAttentionResult result = runDense(device, problem, spec, options);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace tl::cuda
