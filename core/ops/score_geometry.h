#pragma once
// Scaled scores X = S/eps = QKᵀ/(√d·eps) on a support, and the operations a Sinkhorn-type loop needs from
// them: log-sum-exp along rows and columns with potentials added, the plan, and its product with V.
//   DenseScores : every (i, j); n_q × n_k storage.
//   BandScores  : |i − j| ≤ W on raw indices (docs/operators/banded.md#rectangles); n_q × (2W+1) storage, so
//                 memory and every pass are O(n·W). Rows (columns) with no support entry are inactive.
// Entries off the support are −inf: they carry exactly zero mass.
#include <utility>
#include <vector>

#include "common/matrix.h"
#include "ops/log_domain.h"
#include "ops/transport_plan.h"

namespace tl {

template <class T>
class DenseScores {
 public:
  DenseScores(const Mat<T>& Q, const Mat<T>& K, T eps);
  DenseScores(Mat<T> S, T eps);  // from the scores S = QKᵀ/√d already formed (a live session keeps them)
  Eigen::Index rows() const { return X_.rows(); }
  Eigen::Index cols() const { return X_.cols(); }
  Mask activeRows() const { return Mask::Ones(rows()); }
  Mask activeCols() const { return Mask::Ones(cols()); }

  Vec<T> rowLogSumExp(const Vec<T>& colShift) const;  // log Σ_j exp(X_ij + colShift_j)
  Vec<T> colLogSumExp(const Vec<T>& rowShift) const;  // log Σ_i exp(X_ij + rowShift_i)
  // The row closure's LSE and the column LSE over the u it sets, from one pass over X (log_domain.h).
  RowClosurePass<T> rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const;
  // scale · exp(X + ut ⊕ vt), and the extras (row sums, output A·V) from the same pass (expPlan).
  Mat<T> plan(const Vec<T>& ut, const Vec<T>& vt, T scale, const PlanPassExtras<T>& extras = {}) const;
  // The same plan formed in X's own buffer, for a caller done with the scores: one n_q × n_k allocation (and
  // its page faults) less per run.
  Mat<T> intoPlan(const Vec<T>& ut, const Vec<T>& vt, T scale, const PlanPassExtras<T>& extras = {}) &&;

 private:
  Mat<T> X_;
};

// The tokens of an n_q × n_k band |i − j| ≤ W that have a support entry (the others are inactive: rows
// i ≥ n_k + W, columns j ≥ n_q + W).
Mask bandActiveRows(Eigen::Index nq, Eigen::Index nk, Eigen::Index halfWidth);
Mask bandActiveCols(Eigen::Index nq, Eigen::Index nk, Eigen::Index halfWidth);

template <class T>
class BandScores {
 public:
  BandScores(const Mat<T>& Q, const Mat<T>& K, T eps, Eigen::Index halfWidth);
  // From the band of X already formed (the device's, ops/banded/banded_device.h), in band() layout: n_q rows
  // of 2W + 1 slots, −inf off the support.
  BandScores(Mat<T> band, Eigen::Index nk, Eigen::Index halfWidth);
  Eigen::Index rows() const { return nq_; }
  Eigen::Index cols() const { return nk_; }
  Eigen::Index halfWidth() const { return W_; }
  Mask activeRows() const;
  Mask activeCols() const;

  Vec<T> rowLogSumExp(const Vec<T>& colShift) const;
  Vec<T> colLogSumExp(const Vec<T>& rowShift) const;
  // DenseScores' pair of half-steps from one pass over the band (two where W is in the hundreds).
  RowClosurePass<T> rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const;
  // Rows [first, first + count) of the dense plan (display only): O(count·(n_k + W)).
  Mat<T> planRows(const Vec<T>& ut, const Vec<T>& vt, T scale, Eigen::Index first, Eigen::Index count) const;
  Mat<T> apply(const Vec<T>& ut, const Vec<T>& vt, T scale, const Mat<T>& V) const;  // O(n·W·d_v)
  Mat<T> applyTransposed(const Vec<T>& ut, const Vec<T>& vt, T scale, const Mat<T>& W) const;  // Aᵀ·W
  // visit(entry) on the plan's support entries with active rows and columns, row-major: O(n·W).
  void visitEntries(const Vec<T>& ut, const Vec<T>& vt, T scale, const EntryVisitor<T>& visit) const;

  // Band storage, for passes that walk the support themselves (the banded backward): slot b of row i holds
  // X(i, i − W + b); slots [firstSlot(i), lastSlot(i)] are the row's support, the others are −inf.
  const Mat<T>& band() const { return band_; }
  Eigen::Index firstSlot(Eigen::Index i) const;
  Eigen::Index lastSlot(Eigen::Index i) const;

 private:
  // visit(i, j, A_ij) for every support entry with active i and j, row-major.
  template <class Visit>
  void forEachEntry(const Vec<T>& ut, const Vec<T>& vt, T scale, Visit&& visit) const;

  // The band by diagonals, for the log-sum-exp passes: slot c's support entries X(i, i − W + c) for its rows
  // [slotRows(c)), one contiguous run each, so a pass reads each slot once for many tokens at once.
  std::pair<Eigen::Index, Eigen::Index> slotRows(Eigen::Index c) const;
  // runs(c, first, n, add) for the row log-sum-exp over colShift: add(at, x) with slot c's terms for rows first + at …
  // (band_scores.cpp).
  auto rowRuns(const Vec<T>& colShift) const;
  void formDiagonals();
  auto diagonal(Eigen::Index c) { return diagonals_.segment(diagonalStart_[size_t(c)], diagonalLength(c)); }
  auto diagonal(Eigen::Index c) const { return diagonals_.segment(diagonalStart_[size_t(c)], diagonalLength(c)); }
  Eigen::Index diagonalLength(Eigen::Index c) const {
    return diagonalStart_[size_t(c) + 1] - diagonalStart_[size_t(c)];
  }

  Eigen::Index nq_, nk_, W_;
  Mat<T> band_;   // n_q × (2W+1); slot b of row i holds X(i, i − W + b)
  Vec<T> diagonals_;                        // every slot's run, slot after slot
  std::vector<Eigen::Index> diagonalStart_;  // slot c's run starts at diagonalStart_[c]; one more: the total
};

}  // namespace tl
