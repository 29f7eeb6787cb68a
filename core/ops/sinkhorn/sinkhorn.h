#pragma once
// Finite-budget log-domain Sinkhorn attention (docs/operators/sinkhorn.md#definition).
// Budget T = number of single normalisations starting with rows (docs/conventions.md#budget): T=1 is row
// softmax, odd T ends on rows, even T ends on columns. Scores S = QKᵀ/√d, kernel exp(S/eps), marginals
// mu = 1/n_q, nu = 1/n_k (keep-queries: nu_j = 0 on padded keys). Returns A = n_q·P plus the duals after
// every step.
#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

struct SinkhornParams {
  int T = 10;
  double eps = 1.0;
  MaskMode maskMode = MaskMode::Subsequence;
  static SinkhornParams from(const ParamSet& params);
};

template <class T>
PlanResult<T> sinkhornAttention(const AttentionInput<T>& input, const SinkhornParams& params,
                                Feedback& feedback = noFeedback());

void registerSinkhorn(OperatorRegistry& registry);

}  // namespace tl
