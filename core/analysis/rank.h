#pragma once
// Rank of a plan from its singular values σ_1 ≥ … ≥ σ_m ≥ 0 (m = min(n_q, n_k)).
#include <limits>

#include "common/matrix.h"

namespace tl {

struct PlanRank {
  // Effective rank (Roy & Vetterli 2007): exp(−Σ_k p_k log p_k) with p_k = σ_k / Σ σ; between 1 and m,
  // m when all singular values are equal (a permutation), 1 for rank one (the uniform plan); 0 for zero.
  double effective = 0;
  // Number of σ_k > tolerance, tolerance = max(n_q, n_k) · roundoff · σ_1 (the LAPACK / NumPy matrix_rank
  // default).
  int numerical = 0;
  double tolerance = 0;
};

// `roundoff` is the unit roundoff of the precision the plan was computed in (2^-52 for float64; pass
// FLT_EPSILON for a float32 plan widened to double, or its rounding noise counts as rank).
PlanRank planRank(const MatD& plan, double roundoff = std::numeric_limits<double>::epsilon());

}  // namespace tl
