#pragma once
// Dense storage used throughout core/. Row-major so that a matrix maps 1:1 onto a C-order .npy file
// and row i of a plan is query i.
#include <cmath>

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

// Whether every entry is finite, read in storage order by one vectorised sum: an entry times 0 is 0 unless it
// is NaN or infinite, which makes the sum NaN. Eigen 3.4's allFinite() visits a row-major matrix column by
// column, one entry at a time, a cache miss per entry once the matrix outgrows the caches: checking a lazy
// LOT call's inputs took a third of the call at n = 16384.
template <class Scalar>
bool entriesFinite(const Scalar* data, Eigen::Index count) {
  const Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>> entries(data, count);
  return !std::isnan((entries * Scalar(0)).sum());
}
template <class Derived>
bool allEntriesFinite(const Eigen::PlainObjectBase<Derived>& m) {
  return entriesFinite(m.data(), m.size());
}

template <class To, class From>
Mat<To> castMat(const Mat<From>& m) {
  return m.template cast<To>();
}

}  // namespace tl
