#pragma once
// Finite-budget log-domain Sinkhorn attention (docs/operators/sinkhorn.md#definition).
// Budget T = number of single normalisations starting with rows (docs/conventions.md#budget): T=1 is row
// softmax, odd T ends on rows, even T ends on columns. Scores S = QKᵀ/√d, kernel exp(S/eps), marginals
// mu = 1/n_q, nu = 1/n_k (keep-queries: nu_j = 0 on padded keys). Returns A = n_q·P plus the duals after
// every step.
#include <optional>
#include <utility>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/param_bindings.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;
template <class T>
class SinkhornCache;

struct SinkhornParams {
  int T;       // budget: single normalisations, rows first (docs/conventions.md#budget)
  double eps;  // temperature dividing the scores
  MaskMode maskMode;
  SinkhornParams();  // the schema's defaults
  static SinkhornParams from(const ParamSet& resolved);
};
const ParamBindings<SinkhornParams>& sinkhornParamBindings();

// Log marginals in transport scale (docs/conventions.md#masks): mu_i = 1/n_q; nu_j = 1/n_k, or 0 (−inf) on
// the keys `keyMask` marks as padding (keep-queries).
template <class T>
std::pair<Vec<T>, Vec<T>> sinkhornLogMarginals(Eigen::Index nq, Eigen::Index nk, const std::optional<Mask>& keyMask);

// `cache`, when given, is bound to `input` (or to the input `input` was cast from) and supplies what an earlier
// run on it already computed (sinkhorn_cache.h); the result is the same bit for bit.
template <class T>
PlanResult<T> sinkhornAttention(const AttentionInput<T>& input, const SinkhornParams& params,
                                Feedback& feedback = noFeedback(), SinkhornCache<T>* cache = nullptr);

void registerSinkhorn(OperatorRegistry& registry);

}  // namespace tl
