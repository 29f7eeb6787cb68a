#pragma once
// The banded plan as an object (ops/transport_plan.h): the band of scaled scores and the final potentials,
// O(n·W) numbers. A·V and Aᵀ·W walk the band; the dense matrix is formed only when a view asks.
#include <memory>

#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "ops/transport_plan.h"

namespace tl {

template <class T>
class BandPlan final : public TransportPlan<T> {
 public:
  // A = scale·exp(X + ut ⊕ vt) on X's support. The plan shows the first `rows` × `cols` tokens of X: all of
  // them, or the real tokens when a dustbin token was appended to each side (docs/operators/banded.md#dustbin).
  // The dustbin's value is zero, so A·V over the real keys is the top rows of the full product with zero rows
  // appended to V.
  BandPlan(std::shared_ptr<const BandScores<T>> X, Vec<T> ut, Vec<T> vt, T scale, Eigen::Index rows, Eigen::Index cols)
      : X_(std::move(X)), ut_(std::move(ut)), vt_(std::move(vt)), scale_(scale), rows_(rows), cols_(cols) {}

  Eigen::Index rows() const override { return rows_; }
  Eigen::Index cols() const override { return cols_; }
  // Without a dustbin the plan shows all of X's tokens, and the products and rows are X's own, not copies.
  Mat<T> apply(const Mat<T>& V) const override {
    if (!withDustbin()) return X_->apply(ut_, vt_, scale_, V);
    return X_->apply(ut_, vt_, scale_, padded(V, X_->cols())).topRows(rows_);
  }
  Mat<T> applyTransposed(const Mat<T>& W) const override {
    if (!withDustbin()) return X_->applyTransposed(ut_, vt_, scale_, W);
    return X_->applyTransposed(ut_, vt_, scale_, padded(W, X_->rows())).topRows(cols_);
  }
  // Without a dustbin, column j sums to scale·exp(vt_j + log Σ_i exp(X_ij + ut_i)): the band's column pass by
  // diagonals, as packets on every core, where Aᵀ·1 adds the entries one at a time on one (the marginal view
  // asks on every move). With one, the dustbin's row adds to the real columns: Aᵀ·1 over the real rows.
  Vec<T> columnSums() const override {
    if (withDustbin()) return TransportPlan<T>::columnSums();
    return sinkhorn_loop::marginalSums(vt_, X_->colLogSumExp(ut_), scale_);
  }
  Mat<T> materialize() const override { return rowBlock(0, rows_); }
  Mat<T> rowBlock(Eigen::Index first, Eigen::Index count) const override {
    Mat<T> rows = X_->planRows(ut_, vt_, scale_, first, count);
    if (!withDustbin()) return rows;
    return rows.leftCols(cols_);
  }
  bool forEachStoredEntry(const EntryVisitor<T>& visit) const override {
    X_->visitEntries(ut_, vt_, scale_, [&](const PlanEntry<T>& e) {
      if (e.row < rows_ && e.col < cols_) visit(e);  // the real tokens' entries (not the dustbin's)
    });
    return true;
  }
  const char* kind() const override { return "band"; }

 private:
  bool withDustbin() const { return rows_ != X_->rows() || cols_ != X_->cols(); }
  static Mat<T> padded(const Mat<T>& M, Eigen::Index rows) {
    Mat<T> out = Mat<T>::Zero(rows, M.cols());
    out.topRows(M.rows()) = M;
    return out;
  }

  std::shared_ptr<const BandScores<T>> X_;
  Vec<T> ut_, vt_;
  T scale_;
  Eigen::Index rows_, cols_;
};

}  // namespace tl
