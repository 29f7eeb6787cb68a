#pragma once
// The analyses of core/analysis gathered for one operator result, and the distances between two results:
// the single entry point that `tlens plan`, `tlens compare`, the GUI's comparison table and tests use.
#include <limits>
#include <optional>

#include "analysis/column_mass.h"
#include "analysis/plan_stats.h"
#include "analysis/rank.h"
#include "ops/plan_result.h"

namespace tl {

struct PlanAnalysis {
  MarginalErrors errors;      // PlanResult::errors as reported (docs/conventions.md#marginal-errors)
  bool massMismatch = false;  // row and column targets differ in total: label errors "mass mismatch"
  RowEntropy entropy;
  ColumnMass columnMass;
  // Singular values cost O(n³): skipped (absent) when min(n_q, n_k) > kMaxRankSize, never approximated.
  std::optional<PlanRank> rank;
  double seconds = 0;  // the operator's own wall time
};

constexpr Eigen::Index kMaxRankSize = 2048;

// `roundoff`: unit roundoff of the precision the result was computed in (see planRank).
PlanAnalysis analyzePlan(const PlanResult<double>& result, double roundoff = std::numeric_limits<double>::epsilon());

// Distances of `a` to `reference` (plan_distance.h). Throws InvalidArgument when the plans differ in shape.
struct PlanComparison {
  double relativeFrobenius = 0;
  double maxAbs = 0;
  double meanRowKl = 0;
  // ‖A_a V − A_ref V‖_F / ‖A_ref V‖_F from the two outputs; absent unless both results have one (V given).
  std::optional<double> outputDifference;
};

PlanComparison comparePlans(const PlanResult<double>& a, const PlanResult<double>& reference);

}  // namespace tl
