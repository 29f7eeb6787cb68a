#pragma once
// The steps of LOT attention that its CPU reference (lot.cpp) and its CUDA path (lot_cuda.cpp) share, so both
// place the pivots, assemble the result and pad it the same way; only solving the two problems differs.
#include <optional>

#include "common/attention_input.h"
#include "common/feedback.h"
#include "ops/lot/lot.h"
#include "ops/lot/lot_coupling.h"
#include "ops/lot/lot_pivots.h"
#include "ops/plan_result.h"

namespace tl {

// The pivot measure for the tokens of one run without padding (pivot_init resolved; k-means runs on the host
// in float64). InvalidArgument when r exceeds the tokens or given pivots do not fit.
template <class T>
LotPivots lotPivotsFor(const AttentionInput<T>& valid, const LotParams& params, Feedback& feedback);

// The result of one run without padding from its solved coupling: the factored plan (low_rank_plan.h), the
// output (computed by the caller: on the host from the factors, or on the GPU), the marginal errors and the
// extras listed in lot.h.
template <class T>
PlanResult<T> lotResult(const LotCoupling<T>& coupling, const LotPivots& pivots, std::optional<Mat<T>> output);

// After subsequence scattering: padded rows of P1, columns of P2 and their potentials u1, v2 become 0
// (docs/operators/lot.md#masks).
template <class T>
void padLotExtras(PlanResult<T>& result, const Mask& mask);

}  // namespace tl
