#pragma once
// Dense storage used throughout core/. Row-major so that a matrix maps 1:1 onto a C-order .npy file
// and row i of a plan is query i.
#include <Eigen/Core>

namespace tl {

template <class T>
using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using Vec = Eigen::Matrix<T, Eigen::Dynamic, 1>;
// true = valid token, false = padding.
using Mask = Eigen::Array<bool, Eigen::Dynamic, 1>;

using MatD = Mat<double>;
using MatF = Mat<float>;
using VecD = Vec<double>;

// Whether every entry is finite, read in storage order. Eigen 3.4's allFinite() visits a row-major matrix
// column by column, a cache miss per entry once the matrix outgrows the caches: checking a lazy LOT call's
// inputs took a third of the call at n = 16384.
template <class Derived>
bool allEntriesFinite(const Eigen::PlainObjectBase<Derived>& m) {
  using Scalar = typename Derived::Scalar;
  return Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>(m.data(), m.size()).allFinite();
}

template <class To, class From>
Mat<To> castMat(const Mat<From>& m) {
  return m.template cast<To>();
}

}  // namespace tl
