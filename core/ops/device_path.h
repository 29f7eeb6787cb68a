#pragma once
// A family's CUDA path as the registry sees it (ops/family.h): for which typed parameters it runs on the GPU,
// and the run itself, float32 in and out, on the kernels it is given (ops/device_kernels.h: the GPU's, or the
// simulated device in the CPU tests). The Engine and the CLI choose it through the operator's backend
// (Operator::cudaUnsupported, Operator::runCuda); the CPU reference stays the source of truth.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/device_kernels.h"
#include "ops/plan_result.h"

namespace tl {

// What a GPU run hands back besides the output, the duals and the marginal errors.
struct DeviceRequest {
  // The dense n_q × n_k plan, computed on the device (views, export). Without it the fused path never
  // stores n×n and the result's plan stays on the GPU side: A·V, display tiles and the dense matrix are
  // computed from the duals when asked (ops/device_plan.h).
  bool densePlan = false;
};

template <class P>
struct CudaPath {
  // std::nullopt when these parameters run on the GPU, else why not (shown in the status bar and metrics).
  std::function<std::optional<std::string>(const P&)> unsupported;
  // Heads of equal shape and mask run in one launch (batch = B·H); a result per head, in order.
  std::function<std::vector<PlanResult<float>>(const AttentionBatch<float>&, const P&, const DeviceRequest&,
                                                const DenseKernels&, Feedback&)>
      run;
};

}  // namespace tl
