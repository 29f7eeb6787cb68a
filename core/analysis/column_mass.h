#pragma once
// Column-mass ("attention sink") statistics of a plan in attention scale (rows = queries, columns = keys).
// A key that many queries attend to gets a large column sum; a doubly stochastic plan has every column sum 1.
#include "common/matrix.h"

namespace tl {

struct ColumnMass {
  double maxSum = 0;  // max_j Σ_i A_ij
  double gini = 0;    // Gini coefficient of the column sums over the active columns (giniCoefficient)
};

// Gini coefficient of non-negative values x_1..x_m (standard definition):
//   G = Σ_a Σ_b |x_a − x_b| / (2 m Σ_a x_a),
// computed from the ascending order x_(1) ≤ … ≤ x_(m) as G = 2 Σ_k k·x_(k) / (m Σ x) − (m + 1)/m.
// 0 when all values are equal (a doubly stochastic plan); (m − 1)/m when one value holds all the mass.
// 0 for an empty or all-zero vector (no mass, no inequality). Defined for non-negative values; a plan with
// negative entries (DiffTransformer) can have negative column sums, and its Gini then leaves [0, 1].
double giniCoefficient(const VecD& x);

// Column sums of `plan`; the Gini is taken over the columns whose declared target (PlanResult::colTarget,
// docs/conventions.md#marginal-errors) is positive: padded keys are empty by construction, not by attention.
// An empty `colTarget` means every column is active.
ColumnMass columnMass(const MatD& plan, const VecD& colTarget = VecD());
// The same from the column sums themselves (a structured plan's Plan::colSums(), without the dense matrix).
ColumnMass columnMassOfSums(const VecD& sums, const VecD& colTarget = VecD());

}  // namespace tl
