// Sinkhorn attention on the GPU (sinkhorn_cuda.h): request checks, then the dense run (dense_run.h).
#include "cuda/dense_run.h"
#include "cuda/sinkhorn_cuda.h"

namespace tl::cuda {

CudaAttentionResult sinkhornCuda(const AttentionProblem& problem, const SinkhornCudaParams& params,
                                 const CudaOptions& options) {
  validateSinkhornParams(problem, params);
  validateProblem(problem, options, "Sinkhorn");
  return runDenseCuda(problem, sinkhornRunSpec(params), options);
}

CudaAttentionResult planFromDualsCuda(const AttentionProblem& problem, const std::vector<float>& u,
                                      const std::vector<float>& v, double eps, const CudaOptions& options) {
  validateProblem(problem, options, "plan from duals");
  validateDuals(problem, u, v, eps);
  return runDenseCuda(problem, dualsRunSpec(u, v, eps), options);
}

}  // namespace tl::cuda
