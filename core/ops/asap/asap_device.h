#pragma once
// ASAP on the device kernels (ops/device_kernels.h; the CPU reference is asap.h). The predicted source dual
// u0 is formed on the host (the sliced features cost O(L·n log n)); the entropic closures that follow —
// v1 = key closure of u0, then for two-sided u1 and (column closing) v2 — are exactly the Sinkhorn loop of the
// transposed problem (keys as rows) started from u0 as its column duals, with budget 1, 2 or 3; so they run
// on the fused Sinkhorn kernel without storing n×n. The output, the plan and its display tiles then come
// from the final duals in the original orientation, and the marginal errors from the loop's last step
// (rows and columns exchanged back).
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/asap/asap.h"
#include "ops/device_kernels.h"
#include "ops/device_path.h"
#include "ops/plan_result.h"

namespace tl {

// A result per head, like asapAttention's; a layer's heads run as one launch (plus one for the output).
std::vector<PlanResult<float>> asapOnDevice(const AttentionBatch<float>& heads, const AsapParams& params,
                                            const DeviceRequest& request, const DenseKernels& kernels,
                                            Feedback& feedback);

}  // namespace tl
