#pragma once
// The dense log-domain families (softmax, sinkhorn) on the device kernels (ops/device_kernels.h), with the CPU
// reference's conventions: mask modes as core/ops does them (keep-queries: padded keys carry no mass;
// subsequence: the valid tokens are compacted and the result scattered back, ops/subsequence.h), attention
// scale A = n_q·P, duals in score coordinates, the marginal errors after every step. The plan stays on the
// device side as its duals (ops/device_plan.h) unless the dense matrix is requested.
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/device_kernels.h"
#include "ops/device_path.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

struct DenseDeviceRun {
  int budget = 1;        // T: single normalisations, rows first (softmax: 1)
  double eps = 1.0;      // softmax: 1
  bool softmax = false;  // the one-pass softmax kernel (FlashAttention-style output)
  MaskMode maskMode = MaskMode::Subsequence;
};

// A result per head, in order. Heads of equal shape and equal mask (the heads of one model layer) run in one
// launch as one batch; others run one by one. Throws InvalidArgument (bad input), cuda::CudaError (no
// device, driver, memory, kernel fault; a ResourceError) or Canceled. Device memory is released on every path.
std::vector<PlanResult<float>> runDenseOnDevice(const AttentionBatch<float>& heads, const DenseDeviceRun& run,
                                                const DeviceRequest& request, const DenseKernels& kernels,
                                                Feedback& feedback);

}  // namespace tl
