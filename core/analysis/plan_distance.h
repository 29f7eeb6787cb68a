#pragma once
// Distances between two plans of the same shape, in attention scale (rows = queries). `a` is the plan
// being compared, `b` the reference; the relative distances are measured against the reference.
#include "common/matrix.h"

namespace tl {

// ‖a − b‖_F / ‖b‖_F. Also the output difference ‖A₁V − A₂V‖_F / ‖A₂V‖_F when given the two outputs.
// Not symmetric (the reference sets the scale). When ‖b‖_F = 0: 0 if a = b, +inf otherwise.
double relativeFrobenius(const MatD& a, const MatD& b);

// max_ij |a_ij − b_ij| (symmetric).
double maxAbsDifference(const MatD& a, const MatD& b);

// Root mean square of a − b, sqrt(‖a − b‖_F² / size) (symmetric; 0 for empty matrices): how far two outputs
// of the same shape (block outputs, token features) lie apart, per entry.
double rmsDifference(const MatD& a, const MatD& b);

// Mean over rows of KL(a_i ‖ b_i) = Σ_j p_ij log(p_ij / q_ij), with each row normalised to a distribution
// (p_i = a_i / Σ_j a_ij, q_i likewise), as rowEntropy does, so rows that do not sum to 1 still compare.
// Conventions: 0 · log(0 / q) = 0; p > 0 where q = 0 gives +inf (a puts mass where the reference has none).
// Rows where either plan has no mass (padded queries) carry no distribution and are skipped; 0 when no
// row is left. Always ≥ 0; not symmetric. NaN when either map has a negative entry (a diff map: its rows are not
// distributions).
double meanRowKl(const MatD& a, const MatD& b);

}  // namespace tl
