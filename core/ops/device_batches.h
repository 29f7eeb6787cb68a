#pragma once
// How a family's CUDA path turns a list of heads into launches, shared by every family: heads of equal shape
// and equal mask (the heads of one model layer) run as one batch (batch = B·H); others run one by one. The
// mask mode is applied as the CPU reference applies it: `keep-queries` hands the key mask to the launch
// (padded keys carry no mass), `subsequence` compacts the valid tokens of the batch and scatters each result
// back (ops/subsequence.h).
#include <functional>
#include <optional>
#include <vector>

#include "common/attention_input.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

// One launch: heads of equal shape; keyMask is set only for keep-queries with padding. A result per head.
using DeviceLaunch =
    std::function<std::vector<PlanResult<float>>(const AttentionBatch<float>& heads, const std::optional<Mask>& keyMask)>;

// Validates every head (InvalidArgument), then runs the launches. A result per head, in order.
std::vector<PlanResult<float>> runInDeviceBatches(const AttentionBatch<float>& heads, MaskMode mode,
                                                  const DeviceLaunch& launch);

}  // namespace tl
