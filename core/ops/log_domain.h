#pragma once
// Log-sum-exp along rows and columns of the scaled score matrix X = S/eps, with per-column (resp. per-row)
// potentials added in the exponent. Shared by every Sinkhorn-type half-step and c-transform.
// -inf entries (masked keys) are safe: an all -inf set uses max 0 (spec/README.md errata 1), giving -inf.
#include "common/matrix.h"

namespace tl {

// out_i = log sum_j exp(X_ij + colShift_j)
template <class T>
Vec<T> rowLogSumExp(const Mat<T>& X, const Vec<T>& colShift);

// out_j = log sum_i exp(X_ij + rowShift_i); walks X row by row (row-major friendly).
template <class T>
Vec<T> colLogSumExp(const Mat<T>& X, const Vec<T>& rowShift);

// S = Q Kᵀ / sqrt(d) (spec/README.md conventions).
template <class T>
Mat<T> scores(const Mat<T>& Q, const Mat<T>& K);

// Refuses dense n_q × n_k work beyond `bytesLimit` with a ResourceError that says how much it needs.
void checkDenseSize(long long nQueries, long long nKeys, size_t bytesPerEntry, const char* what);

}  // namespace tl
