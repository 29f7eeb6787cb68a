// Low-rank display-tile maxima on the GPU (low_rank_cuda.h): the one translation unit that compiles their kernel.
#include "cuda/cuda_device.cuh"
#include "cuda/low_rank_cuda.h"
#include "cuda/low_rank_run.h"

namespace tl::cuda {

std::vector<float> lowRankMaximaCuda(const LowRankFactors& factors, int rows, int cols) {
  validateLowRankFactors(factors, rows, cols);
  CudaDevice device(0, false);  // outlives the run's buffers
  return runLowRankMaxima(device, factors, rows, cols);
}

}  // namespace tl::cuda
