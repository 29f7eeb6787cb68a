#pragma once
// The kernels' entry points (cuda/sinkhorn_cuda.h, cuda/softmax_cuda.h, cuda/banded_cuda.h, cuda/low_rank_cuda.h,
// cuda/esp_cuda.h, cuda/esp_soft_cuda.h) as values. Every family's device path is written against them: on the
// product they are the GPU kernels (cudaDenseKernels), in the CPU tests the same code runs on the simulated device
// (tests/core/cuda/sim_device.h), so each family's device orchestration (mask modes, batching, scaling, results) is
// verified without a GPU.
#include <functional>
#include <vector>

#include "cuda/attention_problem.h"
#include "cuda/banded_cuda.h"
#include "cuda/low_rank_cuda.h"
#include "cuda/esp_cuda.h"
#include "cuda/esp_soft_cuda.h"
#include "cuda/sinkhorn_cuda.h"

namespace tl {

struct DenseKernels {
  std::function<cuda::CudaAttentionResult(const cuda::AttentionProblem&, const cuda::SinkhornCudaParams&,
                                          const cuda::CudaOptions&)>
      sinkhorn;
  // The one-pass softmax (FlashAttention-style output).
  std::function<cuda::CudaAttentionResult(const cuda::AttentionProblem&, const cuda::CudaOptions&)> softmax;
  // The plan and its products from given duals (score coordinates).
  std::function<cuda::CudaAttentionResult(const cuda::AttentionProblem&, const std::vector<float>& u,
                                          const std::vector<float>& v, double eps, const cuda::CudaOptions&)>
      planFromDuals;
  // The band geometry |i − j| ≤ W (cuda/banded_cuda.h): banded Sinkhorn's loop and output, and the band of
  // scores for its plan.
  std::function<cuda::BandedCudaResult(const cuda::AttentionProblem&, const cuda::BandedCudaParams&,
                                       const cuda::CudaOptions&)>
      banded;
  std::function<std::vector<float>(const cuda::AttentionProblem&, long long W, double eps)> bandScores;
  // Display-tile maxima of a low-rank plan from its factors (cuda/low_rank_cuda.h): LOT's heatmap.
  std::function<std::vector<float>(const cuda::LowRankFactors&, int rows, int cols)> lowRankMaxima;
  // Hard ESP's sorted slices, costs and gathered output (cuda/esp_cuda.h); the simulated device sorts on the host.
  std::function<cuda::EspCudaResult(const cuda::EspCudaProblem&, const cuda::EspCudaOptions&)> esp;
  // Soft ESP (cuda/esp_soft_cuda.h): the SoftSort slices' costs, then the plan from the slices' coefficients.
  std::function<cuda::EspSoftCudaResult(const cuda::EspSoftProblem&, const cuda::SliceCoefficients&,
                                        const std::function<bool()>& canceled)>
      espSoft;
};

// The GPU's kernels (ops/cuda_kernels.cpp). In a build without CUDA each throws ResourceError saying so; the
// registry lists the cuda backend only in CUDA builds, so the Engine never calls them there.
const DenseKernels& cudaDenseKernels();

}  // namespace tl
