#include "ops/softmax/row_softmax.h"

#include <cmath>

#include "common/large_buffers.h"
#include "common/row_product.h"
#include "ops/log_domain.h"
#include "ops/score_blocks.h"

namespace tl {

template <class T>
SoftmaxRow<T> softmaxRowInPlace(T* data, Eigen::Index nk, const Vec<T>* keyShift) {
  Eigen::Map<Eigen::Array<T, 1, Eigen::Dynamic>> row(data, nk);
  SoftmaxRow<T> out;
  out.maxAbsScore = row.abs().template maxCoeff<Eigen::PropagateNaN>();
  if (keyShift) row += keyShift->transpose().array();
  const T shift = logSumExpShift(row.maxCoeff());
  row = exactExp(row - shift);
  const T sum = row.sum();
  out.logSumExp = shift + std::log(sum);
  row *= T(1) / sum;  // a multiply: a division per entry cost as much as the exponential
  out.sum = row.sum();
  return out;
}

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
      const SoftmaxRow<T> row = softmaxRowInPlace(r.plan.row(i).data(), nk, keyShift);
      rowMaxAbs(i) = row.maxAbsScore;
      r.logSumExp(i) = row.logSumExp;
      r.rowSums(i) = row.sum;
      colSums += r.plan.row(i);
    }
    if (V) productRows(r.plan, values, first, end, T(1), *r.output);
  });
  r.colSums = Vec<T>::Zero(nk);
  for (Eigen::Index block = 0; block < blockColSums.rows(); ++block) r.colSums += blockColSums.row(block).transpose();
  r.maxAbsScore = nq == 0 || nk == 0 ? T(0) : rowMaxAbs.template maxCoeff<Eigen::PropagateNaN>();
  return r;
}

template SoftmaxRow<float> softmaxRowInPlace(float*, Eigen::Index, const Vec<float>*);
template SoftmaxRow<double> softmaxRowInPlace(double*, Eigen::Index, const Vec<double>*);
template RowSoftmax<float> rowSoftmax(const Mat<float>&, const Mat<float>&, const Vec<float>*, const Mat<float>*);
template RowSoftmax<double> rowSoftmax(const Mat<double>&, const Mat<double>&, const Vec<double>*,
                                       const Mat<double>*);

}  // namespace tl
