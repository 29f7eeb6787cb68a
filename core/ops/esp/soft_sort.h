#pragma once
// SoftSort (docs/operators/esp.md#soft-sorting, Prillo & Eisenschlos 2020) with the squared distance:
//   P[r, j] = exp(−(v_[r] − v_j)²/t) / Σ_j' exp(−(v_[r] − v_j')²/t),   v_[r] = r-th smallest value.
// Row r = rank r, column j = token j, like a hard sorting matrix R (docs/operators/esp.md#definition). Rows
// sum to 1; entries lie in [0, 1] (many are exactly 0 at small t). Ascending anchors: the code's
// descending order gives the same plan R^Qᵀ Λ R^K when both sides flip (docs/operators/esp.md#resolutions).
// Each row's largest logit is exactly 0 (the anchor is one of the entries), so the softmax cannot overflow.
#include "common/matrix.h"

namespace tl {

template <class T>
Mat<T> softSort(const Vec<T>& values, double temp);

}  // namespace tl
