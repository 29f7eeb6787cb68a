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
#include "common/param_bindings.h"
#include "common/params.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

struct BandedParams {
  int W;          // half-band width: (i, j) in the support iff |i − j| ≤ W
  int baseSteps;  // stopped base, full (row + column) steps
  int tailSteps;  // differentiable tail, full steps
  int tile;       // tile size of the per-tile marginal errors
  double eps;
  bool dustbin;
  MaskMode maskMode;  // subsequence only
  BandedParams();  // the schema's defaults
  // InvalidArgument when base_steps + tail_steps = 0.
  static BandedParams from(const ParamSet& resolved);
  int budget() const { return 2 * (baseSteps + tailSteps); }
};
const ParamBindings<BandedParams>& bandedParamBindings();
// Ranges through the schema, plus the one combination it cannot express (base_steps + tail_steps ≥ 1).
void checkBandedParams(const BandedParams& p);

// The half-band width the system runs with: W, or with a dustbin the whole sequence (every token must reach
// it; docs/operators/banded.md#dustbin). nq, nk count the system's tokens (or the real ones: the support of the
// real tokens is the same).
Eigen::Index systemHalfWidth(const BandedParams& p, Eigen::Index nq, Eigen::Index nk);

template <class T>
PlanResult<T> bandedAttention(const AttentionInput<T>& input, const BandedParams& params,
                              Feedback& feedback = noFeedback());
// O = A·V in O(n·W·d_v) without forming the n×n plan.
template <class T>
Mat<T> bandedOutput(const AttentionInput<T>& input, const BandedParams& params, Feedback& feedback = noFeedback());

void registerBanded(OperatorRegistry& registry);

}  // namespace tl
