#pragma once
// LOT attention on the device (docs/operators/lot.md; the CPU reference is lot.h): the two n × r log-domain
// problems run as rectangular problems of the fused Sinkhorn kernels (ops/device_kernels.h), queries
// against the pivots and the pivots against the keys, so nothing n_q × n_k is formed; the output goes through
// the factors, O = n_q · P1 (diag(1/w) (P2 V)), with both products on the GPU: O(n·r·d) time, O(n·(r + d))
// memory. The pivots (k-means, Gaussian or a file) are placed on the host exactly as the CPU reference places
// them. The marginal errors of A after every step come from the factors of that step (formed on the GPU from
// the dual histories; O(n·r) each). Builds without CUDA: the registry binds it to the GPU kernels in TL_CUDA
// builds, and the CPU tests run it on the simulated device.
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/device_kernels.h"
#include "ops/lot/lot.h"
#include "ops/plan_result.h"

namespace tl {

// A result per head, like lotAttention's (plan factored on the host, extras, errors), computed by `kernels`.
// Heads of one layer (equal shape, mask and pivot masses) run in one launch per problem.
std::vector<PlanResult<float>> lotOnDevice(const AttentionBatch<float>& heads, const LotParams& params,
                                           const DenseKernels& kernels, Feedback& feedback);

}  // namespace tl
