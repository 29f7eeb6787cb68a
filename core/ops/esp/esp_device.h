#pragma once
// Hard ESP attention on the device kernels (ops/device_kernels.h, cuda/esp_cuda.h; the CPU reference is
// esp.h): projections, the segmented sort, tie groups, block masses, slice costs and the gathered output on the
// device; on the host the slice directions and the rank coupling (made as on the CPU; only the L×d
// directions and Λ's O(n) entries travel), the weights (L per head), and the result's plan: the CPU's
// SlicedPlan built from the device's sorted orders, O(L·n) per head (plus the sort of each slice's blocks),
// never n_q × n_k unless the dense plan is requested. sort=soft runs head by head on its own kernels
// (esp_soft_device.h).
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/device_path.h"
#include "ops/esp/esp_params.h"
#include "ops/plan_result.h"

namespace tl {

// What ESP's parameters make of a device problem on the host, as the CPU makes it: the rank coupling's entries
// for n_q × n_k, the cost exponent and the tie rule (sizes, arrays and directions are the caller's).
cuda::EspCudaProblem espDeviceProblem(const EspParams& params, int nq, int nk);
// The slice weights of one head from its L costs: the CPU's sliceWeights, with its overflow check.
std::vector<float> espDeviceWeights(const EspParams& params, const std::vector<float>& costs);

// A result per head, like espAttention's (plan, output, targets, errors and extras), computed by `kernels`.
// Heads of one layer (equal shape and mask) run in one launch.
std::vector<PlanResult<float>> espOnDevice(const AttentionBatch<float>& heads, const EspParams& params,
                                           const DeviceRequest& request, const DenseKernels& kernels,
                                           Feedback& feedback);

}  // namespace tl
