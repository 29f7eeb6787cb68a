#include "ops/score_geometry.h"

#include <utility>

#include "ops/log_domain.h"

namespace tl {

template <class T>
DenseScores<T>::DenseScores(const Mat<T>& Q, const Mat<T>& K, T eps) : X_(scaledScores(Q, K, double(eps))) {}

template <class T>
DenseScores<T>::DenseScores(Mat<T> S, T eps) : X_(scaledScores(std::move(S), eps)) {}

template <class T>
Vec<T> DenseScores<T>::rowLogSumExp(const Vec<T>& colShift) const {
  return tl::rowLogSumExp(X_, colShift);
}

template <class T>
Vec<T> DenseScores<T>::colLogSumExp(const Vec<T>& rowShift) const {
  return tl::colLogSumExp(X_, rowShift);
}

template <class T>
RowClosurePass<T> DenseScores<T>::rowClosurePass(const Vec<T>& colShift, const Vec<T>& logRowMarginal) const {
  return tl::rowClosurePass(X_, colShift, logRowMarginal);
}

template <class T>
Mat<T> DenseScores<T>::plan(const Vec<T>& ut, const Vec<T>& vt, T scale, const PlanPassExtras<T>& extras) const {
  Mat<T> out;
  expPlan(X_, ut, vt, scale, out, extras);
  return out;
}

template <class T>
Mat<T> DenseScores<T>::intoPlan(const Vec<T>& ut, const Vec<T>& vt, T scale, const PlanPassExtras<T>& extras) && {
  Mat<T> out = std::move(X_);
  expPlan(out, ut, vt, scale, out, extras);
  return out;
}

template class DenseScores<float>;
template class DenseScores<double>;

}  // namespace tl
