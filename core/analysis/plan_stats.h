#pragma once
// Diagnostics computed from any plan (attention scale, rows = queries).
#include "common/matrix.h"
#include "ops/plan_result.h"

namespace tl {

struct RowEntropy {
  double mean = 0, stddev = 0;  // of H_i = -sum_j A_ij log A_ij over rows with mass
};

// NaN for a map with a negative entry (diff): its rows are not distributions.
RowEntropy rowEntropy(const MatD& plan);

// Marginal errors of a dense plan against targets (attention scale); used by tests and by operators whose
// marginals are not known in closed form.
MarginalErrors marginalErrors(const MatD& plan, const VecD& rowTarget, const VecD& colTarget);

}  // namespace tl
