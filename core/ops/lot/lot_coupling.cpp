#include "ops/lot/lot_coupling.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "common/large_buffers.h"
#include "common/parallel.h"
#include "common/row_product.h"
#include "ops/display_grid.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"

namespace tl {
namespace {

// One entropic problem max <S,P> + eps·H(P) over Π(a, b) (docs/operators/lot.md#definition), on X = S/eps.
// Potentials are kept in eps units (ut = u/eps, vt = v/eps) so every single normalisation is one log-sum-exp.
template <class T>
class EntropicProblem {
 public:
  EntropicProblem(Mat<T> X, Vec<T> loga, Vec<T> logb)
      : X_(std::move(X)), loga_(std::move(loga)), logb_(std::move(logb)), ut_(Vec<T>::Zero(X_.rows())),
        vt_(Vec<T>::Zero(X_.cols())) {}

  // Single normalisation t = 1, 2, ... (docs/operators/sinkhorn.md#definition): odd t closes the rows, even t
  // the columns.
  void normalise(int t) {
    if (t % 2 == 1)
      ut_ = loga_ - rowLogSumExp(X_, vt_);
    else
      vt_ = logb_ - colLogSumExp(X_, ut_);
  }

  // Into `out`, reusing its buffer when the shape already fits (the plans are formed every step to track errors).
  void plan(Mat<T>& out) const { expPlan(X_, ut_, vt_, T(1), out); }
  Vec<T> u(T eps) const { return eps * ut_; }
  Vec<T> v(T eps) const { return eps * vt_; }

 private:
  Mat<T> X_;
  Vec<T> loga_, logb_;
  Vec<T> ut_, vt_;
};

}  // namespace

template <class T>
Mat<T> LotCoupling<T>::apply(const Mat<T>& V) const {
  const Vec<T> invw = (-logw.array()).exp().matrix();
  const Mat<T> KV = invw.asDiagonal() * (P2 * V);  // r × d_v: diag(1/w) (P2 V)
  return T(P1.rows()) * (P1 * KV);
}

template <class T>
Mat<T> LotCoupling<T>::applyTransposed(const Mat<T>& W) const {
  const Vec<T> invw = (-logw.array()).exp().matrix();
  const Mat<T> QW = invw.asDiagonal() * (P1.transpose() * W);  // r × c: diag(1/w) (P1ᵀ W)
  return T(P1.rows()) * (P2.transpose() * QW);
}

template <class T>
Mat<T> LotCoupling<T>::dense() const {
  return denseRows(0, P1.rows());
}

// A's rows from B = n_q · diag(1/w) P2 (r × n_k, laid out once for common/row_product.h): each entry of A is
// summed in registers and written once, rows split across threads. (Eigen's product zeroed each block of A and
// then accumulated into it: 10 % of a profile at n = 4096.)
template <class T>
Mat<T> LotCoupling<T>::denseRows(Eigen::Index first, Eigen::Index count) const {
  const ProductPanels<T> keys = productPanels(gluedKeys());
  const Mat<T> queries = P1.middleRows(first, count);
  Mat<T> A = largeMatrix<T>(count, P2.cols());
  parallelFor(count, double(count) * double(P2.cols()) * double(P1.cols()), [&](Eigen::Index begin, Eigen::Index end) {
    productRows(queries, keys, begin, end, T(1), A);
  });
  return A;
}

template <class T>
Mat<T> LotCoupling<T>::gluedKeys() const {
  return (T(P1.rows()) * (-logw.array()).exp()).matrix().asDiagonal() * P2;
}

namespace {

// Block b of a display grid's axis (PooledPlan's row or column starts): its first index and its length.
std::pair<Eigen::Index, Eigen::Index> gridBlock(const std::vector<long long>& starts, Eigen::Index b) {
  return {Eigen::Index(starts[size_t(b)]), Eigen::Index(starts[size_t(b) + 1] - starts[size_t(b)])};
}

// Runs of consecutive blocks of a display grid's axis spanning at most `span` indices each (at least one block):
// the first block of every run, then the block count.
std::vector<Eigen::Index> blockRuns(const std::vector<long long>& starts, long long span) {
  const Eigen::Index blocks = Eigen::Index(starts.size()) - 1;
  std::vector<Eigen::Index> runs{0};
  for (Eigen::Index b = 1; b < blocks; ++b)
    if (starts[size_t(b) + 1] - starts[size_t(runs.back())] > span) runs.push_back(b);
  runs.push_back(blocks);
  return runs;
}

}  // namespace

template <class T>
PooledPlan<T> LotCoupling<T>::pooledMeans(int maxRows, int maxCols, const Mat<T>& glued) const {
  PooledPlan<T> p = displayGrid<T>(P1.rows(), P2.cols(), maxRows, maxCols);
  Mat<T> rowSums(p.mean.rows(), P1.cols()), colSums(glued.rows(), p.mean.cols());  // Σ_R P1 and Σ_C B
  for (Eigen::Index b = 0; b < rowSums.rows(); ++b) {
    const auto [first, count] = gridBlock(p.rowStarts, b);
    rowSums.row(b) = P1.middleRows(first, count).colwise().sum();
  }
  for (Eigen::Index c = 0; c < colSums.cols(); ++c) {
    const auto [first, count] = gridBlock(p.colStarts, c);
    colSums.col(c) = glued.middleCols(first, count).rowwise().sum();
  }
  p.mean.noalias() = rowSums * colSums;
  for (Eigen::Index b = 0; b < p.mean.rows(); ++b)
    for (Eigen::Index c = 0; c < p.mean.cols(); ++c)
      p.mean(b, c) /= T(gridBlock(p.rowStarts, b).second) * T(gridBlock(p.colStarts, c).second);
  return p;
}

// A is formed tile by tile, each tile whole display blocks of about kTileRows × kTileCols entries: one product per
// tile, large enough that packing its operands costs little next to it. (One product per display block, 8 × 8
// entries at n = 4096 on a 512 × 512 grid, made the LOT heatmap take 100 ms of every slider move.)
template <class T>
PooledPlan<T> LotCoupling<T>::pooled(int maxRows, int maxCols) const {
  constexpr long long kTileRows = 256, kTileCols = 8192;
  const Mat<T> B = gluedKeys();
  PooledPlan<T> p = pooledMeans(maxRows, maxCols, B);
  const std::vector<Eigen::Index> rowRuns = blockRuns(p.rowStarts, kTileRows), colRuns = blockRuns(p.colStarts, kTileCols);
  const double work = double(P1.rows()) * double(B.cols()) * double(B.rows());
  parallelFor(Eigen::Index(rowRuns.size()) - 1, work, [&](Eigen::Index firstRun, Eigen::Index endRun) {
    Mat<T> tile;  // one tile of A at a time, reused
    for (Eigen::Index run = firstRun; run < endRun; ++run) {
      const Eigen::Index b0 = rowRuns[size_t(run)], b1 = rowRuns[size_t(run) + 1], i0 = p.rowStarts[size_t(b0)];
      for (size_t colRun = 0; colRun + 1 < colRuns.size(); ++colRun) {
        const Eigen::Index c0 = colRuns[colRun], c1 = colRuns[colRun + 1], j0 = p.colStarts[size_t(c0)];
        tile.noalias() = P1.middleRows(i0, p.rowStarts[size_t(b1)] - i0) * B.middleCols(j0, p.colStarts[size_t(c1)] - j0);
        for (Eigen::Index b = b0; b < b1; ++b) {
          const auto [firstRow, rowCount] = gridBlock(p.rowStarts, b);
          for (Eigen::Index c = c0; c < c1; ++c) {
            const auto [firstCol, colCount] = gridBlock(p.colStarts, c);
            p.max(b, c) = tile.block(firstRow - i0, firstCol - j0, rowCount, colCount).maxCoeff();
          }
        }
      }
    }
  });
  return p;
}

template <class T>
Vec<T> LotCoupling<T>::rowTarget() const {
  return Vec<T>::Ones(P1.rows());
}

template <class T>
Vec<T> LotCoupling<T>::colTarget() const {
  return Vec<T>::Constant(P2.cols(), T(P1.rows()) / T(P2.cols()));
}

// A 1 = n_q·P1 (P2 1 / w), 1ᵀA = n_q·(P1ᵀ1 / w)ᵀ P2.
template <class T>
MarginalErrors LotCoupling<T>::errors() const {
  const Vec<T> invw = (-logw.array()).exp().matrix();
  const T nq = T(P1.rows());
  const Vec<T> rowSums = nq * (P1 * invw.cwiseProduct(P2.rowwise().sum()));
  const Vec<T> colSums = nq * (P2.transpose() * invw.cwiseProduct(P1.colwise().sum().transpose()));
  return marginalErrorsFromSums<T>(rowSums, rowTarget(), colSums, colTarget());
}

template <class T>
LotCoupling<T> solveLotCoupling(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& Z, const Vec<T>& logw, double eps,
                                int budget, bool trackErrors, Feedback& feedback) {
  const T e = T(eps);
  const Eigen::Index nq = Q.rows(), nk = K.rows();
  const Vec<T> logQueries = Vec<T>::Constant(nq, -std::log(T(nq)));  // a = 1/n_q
  const Vec<T> logKeys = Vec<T>::Constant(nk, -std::log(T(nk)));     // b = 1/n_k
  // (1) queries → pivots on S1 = Q Zᵀ/√d; (2) pivots → keys on S2 = Z Kᵀ/√d
  // (docs/operators/lot.md#definition).
  EntropicProblem<T> toPivots(scaledScores(Q, Z, eps), logQueries, logw);
  EntropicProblem<T> fromPivots(scaledScores(Z, K, eps), logw, logKeys);

  LotCoupling<T> c;
  c.logw = logw;
  for (int t = 1; t <= budget; ++t) {
    feedback.throwIfCanceled();
    toPivots.normalise(t);
    fromPivots.normalise(t);
    if (trackErrors || t == budget) {
      toPivots.plan(c.P1);
      fromPivots.plan(c.P2);
    }
    if (trackErrors) c.errorHistory.push_back(c.errors());
    feedback.setProgress(double(t) / budget, "lot");
  }
  c.u1 = toPivots.u(e);
  c.v1 = toPivots.v(e);
  c.u2 = fromPivots.u(e);
  c.v2 = fromPivots.v(e);
  return c;
}

template struct LotCoupling<float>;
template struct LotCoupling<double>;
template LotCoupling<float> solveLotCoupling(const Mat<float>&, const Mat<float>&, const Mat<float>&,
                                             const Vec<float>&, double, int, bool, Feedback&);
template LotCoupling<double> solveLotCoupling(const Mat<double>&, const Mat<double>&, const Mat<double>&,
                                              const Vec<double>&, double, int, bool, Feedback&);

}  // namespace tl
