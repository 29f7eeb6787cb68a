#pragma once
// Row softmax attention A = softmax_j(S_ij), which is exactly the T=1 Sinkhorn (its fused one-pass computation:
// ops/softmax/row_softmax.h).
// Duals in score coordinates: u_i = log(1/n_q) − LSE_j S_ij, v = 0 on valid keys (docs/operators/softmax.md).
#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/param_bindings.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

struct SoftmaxParams {
  MaskMode maskMode;
  SoftmaxParams();  // the schema's defaults
  static SoftmaxParams from(const ParamSet& resolved);
};
const ParamBindings<SoftmaxParams>& softmaxParamBindings();

template <class T>
PlanResult<T> softmaxAttention(const AttentionInput<T>& input, const SoftmaxParams& params,
                               Feedback& feedback = noFeedback());

void registerSoftmax(OperatorRegistry& registry);

}  // namespace tl
