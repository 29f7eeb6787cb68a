// Softmax attention on the GPU (softmax_cuda.h): request checks, then the dense run with the one-pass
// FlashSoftmaxKernel (softmax_kernels.h) for the output.
#include "cuda/dense_run.h"
#include "cuda/softmax_cuda.h"

namespace tl::cuda {

CudaAttentionResult softmaxCuda(const AttentionProblem& problem, const CudaOptions& options) {
  validateProblem(problem, options, "softmax");
  return runDenseCuda(problem, softmaxRunSpec(), options);
}

}  // namespace tl::cuda
