#pragma once
// SoftSort (docs/operators/esp.md#soft-sorting, Prillo & Eisenschlos 2020) with the squared distance:
//   P[r, j] = exp(−(v_[r] − v_j)²/t) / Σ_j' exp(−(v_[r] − v_j')²/t),   v_[r] = r-th smallest value.
// Row r = rank r, column j = token j, like a hard sorting matrix R (docs/operators/esp.md#definition). Rows
// sum to 1; entries lie in [0, 1] (many are exactly 0 at small t). Ascending anchors: the code's
// descending order gives the same plan R^Qᵀ Λ R^K when both sides flip (docs/operators/esp.md#resolutions).
// Each row's largest logit is exactly 0 (the anchor is one of the entries), so the softmax cannot overflow.
#include <cmath>
#include <limits>

#include "common/matrix.h"

namespace tl {

template <class T>
Mat<T> softSort(const Vec<T>& values, double temp);

// The band of a SoftSort row: entries whose logit −(x_(r) − x_j)²/t is below −softSortLogitFloor<T>() may be
// left out (the training path and the device path do). Each row's largest entry is exp(0) = 1 before
// normalisation, so what is left out is below n·e^−floor of the row's mass: under T's rounding (epsilon) for
// any n up to 10^6. That is e^−30 in float32, e^−50 in float64.
template <class T>
T softSortLogitFloor() {
  return std::log(T(1e6) / std::numeric_limits<T>::epsilon());
}

// |x_(r) − x_j| ≤ softSortReach(t)  ⟺  the entry is inside the band (its logit is at least −floor).
template <class T>
T softSortReach(T temp) {
  return std::sqrt(softSortLogitFloor<T>() * temp);
}

}  // namespace tl
