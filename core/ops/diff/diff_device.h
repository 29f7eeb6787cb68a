#pragma once
// DiffTransformer attention on the device kernels (ops/device_kernels.h; the CPU reference is diff.h): the
// two softmax maps of the halves of the head dimension as two one-pass softmax launches (FlashAttention-style,
// the scores never stored), O = O1 − lambda·O2. The row sums of A come with the outputs (a column of ones
// beside V), the column sums from each map's transposed product with ones, so the marginal errors need no
// n_q × n_k matrix either. The plan stays as the two maps' duals on the device side unless the dense matrix
// is requested.
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/device_kernels.h"
#include "ops/device_path.h"
#include "ops/diff/diff.h"
#include "ops/plan_result.h"

namespace tl {

// A result per head, like diffAttention's; a layer's heads run as one launch per map.
std::vector<PlanResult<float>> diffOnDevice(const AttentionBatch<float>& heads, const DiffParams& params,
                                            const DeviceRequest& request, const DenseKernels& kernels,
                                            Feedback& feedback);

}  // namespace tl
