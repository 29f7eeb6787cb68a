#pragma once
// Banded Sinkhorn attention on the device kernels (ops/device_kernels.h; the CPU reference is banded.h): the
// centred base and raw tail on the band |i − j| ≤ W, row tiles visiting only the key tiles their band meets
// (cuda/banded_cuda.h), so work is O(n·W·d) per pass and memory O(n·(d + d_v)), never n_q × n_k. Output,
// duals, dual histories, marginal errors and the per-tile errors come from the loop; the plan is the CPU's
// band (kind "band", O(n·W)), its band of scores formed on the device when first asked — at once when the
// request asks for the plan, or with a dustbin, whose masses are plan products (the dustbin widens the band to
// the whole sequence, as on the CPU).
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/banded/banded.h"
#include "ops/device_kernels.h"
#include "ops/device_path.h"
#include "ops/plan_result.h"

namespace tl {

// A result per head, like bandedAttention's; a layer's heads run as one launch.
std::vector<PlanResult<float>> bandedOnDevice(const AttentionBatch<float>& heads, const BandedParams& params,
                                              const DeviceRequest& request, const DenseKernels& kernels,
                                              Feedback& feedback);

}  // namespace tl
