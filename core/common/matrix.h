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

template <class To, class From>
Mat<To> castMat(const Mat<From>& m) {
  return m.template cast<To>();
}

}  // namespace tl
