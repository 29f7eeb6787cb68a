#include "ops/softmax/row_softmax.h"

#include <cmath>

#include "common/large_buffers.h"
#include "common/row_product.h"
#include "ops/log_domain.h"
#include "ops/score_blocks.h"

namespace tl {

template <class T>
RowSoftmax<T> rowSoftmax(const Mat<T>& Q, const Mat<T>& K, const Vec<T>* keyShift, const Mat<T>* V) {
  const Eigen::Index nq = Q.rows(), nk = K.rows();
  RowSoftmax<T> r;
  r.plan = largeMatrix<T>(nq, nk);
  r.logSumExp.resize(nq);
  r.rowSums.resize(nq);
  if (V) r.output.emplace(nq, V->cols());
  Vec<T> rowMaxAbs(nq);
  Mat<T> blockColSums(scoreBlockCount<T>(nq, nk), nk);
  const ProductPanels<T> values = productPanels(V ? *V : Mat<T>());
  forEachScoreBlock(Q, K, r.plan, [&](Eigen::Index block, Eigen::Index first, Eigen::Index end) {
    auto colSums = blockColSums.row(block);
    colSums.setZero();
    for (Eigen::Index i = first; i < end; ++i) {
      auto row = r.plan.row(i).array();
      rowMaxAbs(i) = row.abs().template maxCoeff<Eigen::PropagateNaN>();
      if (keyShift) row += keyShift->transpose().array();
      const T shift = logSumExpShift(row.maxCoeff());
      row = exactExp(row - shift);
      const T sum = row.sum();
      r.logSumExp(i) = shift + std::log(sum);
      row *= T(1) / sum;  // a multiply: a division per entry cost as much as the exponential
      r.rowSums(i) = row.sum();
      colSums += row.matrix();
    }
    if (V) productRows(r.plan, values, first, end, T(1), *r.output);
  });
  r.colSums = Vec<T>::Zero(nk);
  for (Eigen::Index block = 0; block < blockColSums.rows(); ++block) r.colSums += blockColSums.row(block).transpose();
  r.maxAbsScore = nq == 0 || nk == 0 ? T(0) : rowMaxAbs.template maxCoeff<Eigen::PropagateNaN>();
  return r;
}

template RowSoftmax<float> rowSoftmax(const Mat<float>&, const Mat<float>&, const Vec<float>*, const Mat<float>*);
template RowSoftmax<double> rowSoftmax(const Mat<double>&, const Mat<double>&, const Vec<double>*,
                                       const Mat<double>*);

}  // namespace tl
