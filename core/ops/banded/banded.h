#pragma once
// Block-wise banded Sinkhorn attention, forward (docs/operators/banded.md#definition): unit-target Sinkhorn
// restricted to the support |i − j| ≤ W (raw indices), a stopped base of `base_steps` full (row+column)
// steps, centred, then `tail_steps` raw full steps; equivalent budget T = 2·(base_steps + tail_steps).
// Band storage keeps memory O(n·W). Optional single active dustbin (docs/operators/banded.md#dustbin): one
// extra token per side with unit mass, reachable from every token (the support becomes dense, as in
// the paper). Duals are written in score coordinates (docs/conventions.md#duals):
// A = n_q·exp((S + u ⊕ v)/eps) on the support.
#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/params.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

struct BandedParams {
  int W = 16;
  int baseSteps = 15;
  int tailSteps = 2;
  int tile = 64;
  double eps = 1.0;
  bool dustbin = false;
  static BandedParams from(const ParamSet& params);
  int budget() const { return 2 * (baseSteps + tailSteps); }
};

template <class T>
PlanResult<T> bandedAttention(const AttentionInput<T>& input, const BandedParams& params,
                              Feedback& feedback = noFeedback());
// O = A·V in O(n·W·d_v) without forming the n×n plan.
template <class T>
Mat<T> bandedOutput(const AttentionInput<T>& input, const BandedParams& params, Feedback& feedback = noFeedback());

void registerBanded(OperatorRegistry& registry);

}  // namespace tl
