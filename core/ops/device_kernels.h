#pragma once
// The dense kernels' two entry points (cuda/sinkhorn_cuda.h) as values, for families whose device path is an
// orchestration of those kernels on other problems (LOT: queries against pivots, pivots against keys). On the
// product they are the GPU kernels (ops/cuda_attention.h cudaDenseKernels, TL_CUDA builds only); in the CPU
// tests the same orchestration runs on the simulated device (tests/core/cuda/sim_device.h), so it is verified
// without a GPU.
#include <functional>
#include <vector>

#include "cuda/attention_problem.h"
#include "cuda/sinkhorn_cuda.h"

namespace tl {

struct DenseKernels {
  std::function<cuda::CudaAttentionResult(const cuda::AttentionProblem&, const cuda::SinkhornCudaParams&,
                                          const cuda::CudaOptions&)>
      sinkhorn;
  // The plan and its products from given duals (score coordinates).
  std::function<cuda::CudaAttentionResult(const cuda::AttentionProblem&, const std::vector<float>& u,
                                          const std::vector<float>& v, double eps, const cuda::CudaOptions&)>
      planFromDuals;
};

}  // namespace tl
