#pragma once
// Row softmax A_ij = exp(S_ij + v_j − LSE_i), LSE_i = log Σ_j exp(S_ij + v_j), S = QKᵀ/√d, in one pass over the
// scores: each block of rows is formed (ops/score_blocks.h), normalised and multiplied into V while it is in the
// core's cache, one exponential per entry, and the plan's row and column sums are summed on the way.
//
// It is the T = 1 Sinkhorn step (docs/operators/softmax.md#definition) and gives the same numbers within
// rounding; the Sinkhorn loop computes it with three exponentials per entry (the row log-sum-exp, the column
// log-sum-exp that reports the column marginal, the plan) and reads the n_q × n_k scores from memory for each,
// which made softmax 5-6× its exponential floor and the slowest ratio to PyTorch in `tlens bench`.
#include <optional>

#include "common/matrix.h"

namespace tl {

template <class T>
struct RowSoftmax {
  Mat<T> plan;                   // A, n_q × n_k (rows sum to 1)
  std::optional<Mat<T>> output;  // A V, when V was given
  Vec<T> logSumExp;              // LSE_i over the active keys
  Vec<T> rowSums, colSums;       // of A, summed from its entries
  T maxAbsScore = 0;             // max |S_ij|: NaN or inf when QKᵀ overflowed (checkScaledScores refuses it)
};

// One row of scores made its softmax in place, as rowSoftmax makes each row of its plan: `row` holds the row's n_k
// scores, keyShift is as below. Returns the row's max |score| (before the shift), its log-sum-exp and the sum of
// the softmax it leaves in `row`.
template <class T>
struct SoftmaxRow {
  T maxAbsScore, logSumExp, sum;
};
template <class T>
SoftmaxRow<T> softmaxRowInPlace(T* row, Eigen::Index nk, const Vec<T>* keyShift = nullptr);

// keyShift: v_j, 0 for an active key and −inf for a masked one; nullptr when every key is active. The column
// sums are summed per block of rows and then over blocks in block order, so they do not depend on the thread
// count.
template <class T>
RowSoftmax<T> rowSoftmax(const Mat<T>& Q, const Mat<T>& K, const Vec<T>* keyShift, const Mat<T>* V);

}  // namespace tl
