#pragma once
// DiffTransformer attention, the ESPFormer baseline (docs/operators/diff.md#definition):
//   A = softmax(Q1 K1ᵀ/√h) − lambda·softmax(Q2 K2ᵀ/√h),   O = A V,
// where [Q1 | Q2] and [K1 | K2] split the head dimension d into two halves of h = d/2 (d must be even).
// A is not a transport plan: entries can be negative and rows sum to 1 − lambda. Its marginal errors are
// reported against the doubly-stochastic targets of the other families (rows 1, columns n_q/n_k), so the
// row error shows |lambda|. The per-head GroupNorm and (1 − λ_init) factor belong to the layer, not here.
#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/param_bindings.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

struct DiffParams {
  double lambda;  // weight of the second softmax map
  MaskMode maskMode;
  DiffParams();  // the schema's defaults
  static DiffParams from(const ParamSet& resolved);
};
const ParamBindings<DiffParams>& diffParamBindings();

// InvalidArgument unless d is even (DiffTransformer splits Q and K into two halves).
void checkDiffHeadDimension(Eigen::Index d);

template <class T>
PlanResult<T> diffAttention(const AttentionInput<T>& input, const DiffParams& params,
                            Feedback& feedback = noFeedback());

void registerDiff(OperatorRegistry& registry);

}  // namespace tl
