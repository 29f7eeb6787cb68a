#pragma once
// Marginal errors from row/column sums against declared targets (attention scale;
// docs/conventions.md#marginal-errors).
#include "common/matrix.h"
#include "ops/plan_result.h"

namespace tl {

struct SideError {
  double max = 0, mean = 0;
};

// max and mean of |sums − target| over one side (rows or columns).
template <class T>
SideError sideError(const Vec<T>& sums, const Vec<T>& target) {
  SideError e;
  if (sums.size() == 0) return e;
  // Formed once, in double, then reduced as packets: a reduction of the cast expression ran one scalar add
  // after another.
  const Eigen::Array<double, Eigen::Dynamic, 1> deviation = (sums - target).array().abs().template cast<double>();
  e.max = deviation.maxCoeff();
  e.mean = deviation.mean();
  return e;
}

template <class T>
MarginalErrors marginalErrorsFromSums(const Vec<T>& rowSums, const Vec<T>& rowTarget, const Vec<T>& colSums,
                                      const Vec<T>& colTarget) {
  const SideError rows = sideError(rowSums, rowTarget), cols = sideError(colSums, colTarget);
  return {rows.max, rows.mean, cols.max, cols.mean};
}

}  // namespace tl
