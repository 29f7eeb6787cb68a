#pragma once
// LOT's plan as an object (ops/transport_plan.h): the two n × r factors glued through the pivot masses,
// A = n_q · P1 diag(1/w) P2. Products cost O(n·r·d); the dense matrix is formed only when a view asks.
#include "ops/lot/lot_coupling.h"
#include "ops/transport_plan.h"

namespace tl {

template <class T>
class LowRankPlan : public TransportPlan<T> {
 public:
  explicit LowRankPlan(LotCoupling<T> coupling) : c_(std::move(coupling)) {}
  Eigen::Index rows() const override { return c_.P1.rows(); }
  Eigen::Index cols() const override { return c_.P2.cols(); }
  Mat<T> apply(const Mat<T>& V) const override { return c_.apply(V); }
  Mat<T> applyTransposed(const Mat<T>& W) const override { return c_.applyTransposed(W); }
  Mat<T> materialize() const override { return c_.dense(); }
  Mat<T> rowBlock(Eigen::Index first, Eigen::Index count) const override { return c_.denseRows(first, count); }
  PooledPlan<T> pooled(int maxRows, int maxCols) const override { return c_.pooled(maxRows, maxCols); }
  const char* kind() const override { return "low-rank"; }
  const LotCoupling<T>& coupling() const { return c_; }

 private:
  LotCoupling<T> c_;
};

}  // namespace tl
