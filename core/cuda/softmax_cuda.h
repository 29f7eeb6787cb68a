#pragma once
// Softmax attention on the GPU (core/ops/softmax/softmax.h on the CUDA backend): exactly the T = 1 Sinkhorn step with
// eps = 1, u_i = log μ_i − LSE_j(x_ij + vt_j), v = 0 on active keys and −inf on inactive ones. With v, the
// output O = A·V is computed in one pass that never stores the scores (FlashAttention-2's online softmax).
// The errors (options.errors) need one more pass over the keys, for the column sums.
#include "cuda/attention_problem.h"

namespace tl::cuda {

CudaAttentionResult softmaxCuda(const AttentionProblem& problem, const CudaOptions& options = {});

}  // namespace tl::cuda
