#pragma once
// Soft ESP (sort=soft, SoftSort; docs/operators/esp.md#soft-sorting) on the device kernels
// (ops/device_kernels.h, cuda/esp_soft_cuda.h), with the CPU reference's result (esp.h espAttention):
// the dense soft plan, its output, marginal errors, and the extras esp_weights and esp_costs (the soft D_l),
// esp_directions, esp_matchings, esp_ties and esp_hard_distance.
//  On the host: the hard slices (the CPU's own hard ESP, O(L·n·(log n + d)) and nothing n×n: its matchings,
//  tie counts, directions and marginal targets are the soft result's too), the projections and their sorts,
//  the weights from the device's costs, the marginal sums and the distance to the hard plan from its O(L·n)
//  stored entries.
//  On the device: the SoftSort entries, D_l = <C, U_l>, the plan Σ_l n_q·w_l·U_l and O = A·V, slice by slice
//  on the SoftSort bands, holding one n_q × n_k array (the plan; docs/cuda.md#soft-esp-on-the-device).
// Padding (mask_mode=subsequence) takes the valid tokens only; padded rows and columns of the plan are 0.
#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/device_kernels.h"
#include "ops/esp/esp_params.h"
#include "ops/plan_result.h"

namespace tl {

// Throws InvalidArgument for sort=hard (it has a device path of its own) and for what espAttention refuses.
PlanResult<float> espSoftOnDevice(const AttentionInput<float>& input, const EspParams& params,
                                  const DenseKernels& kernels, Feedback& feedback = noFeedback());

}  // namespace tl
