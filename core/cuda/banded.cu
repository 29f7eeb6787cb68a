// Banded Sinkhorn attention on the GPU (banded_cuda.h): request checks, then the banded run (band_run.h), the
// one translation unit that compiles the band kernels.
#include "cuda/band_run.h"
#include "cuda/banded_cuda.h"
#include "cuda/cuda_device.cuh"

namespace tl::cuda {

template class BandRun<CudaDevice>;

BandedCudaResult bandedCuda(const AttentionProblem& problem, const BandedCudaParams& params,
                            const CudaOptions& options) {
  validateBandedParams(params, options);
  validateProblem(problem, options, "banded");
  CudaDevice device(options.device, options.syncEachKernel);  // outlives the run's buffers
  return runBanded(device, problem, params, options);
}

std::vector<float> bandScoresCuda(const AttentionProblem& problem, long long W, double eps) {
  validateBandedParams(BandedCudaParams{W, 0, 1, eps}, {});
  validateProblem(problem, {}, "banded");
  CudaDevice device(0, false);
  return runBandScores(device, problem, W, eps);
}

}  // namespace tl::cuda
