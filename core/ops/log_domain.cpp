#include "ops/log_domain.h"

#include <cmath>
#include <limits>

#include "common/errors.h"

namespace tl {
namespace {
// A running max of -inf means every term is -inf (all masked): use 0 so that exp(x - m) never sees
// -inf - (-inf) = NaN; the sum is then 0 and its log -inf (docs/conventions.md#log-domain).
template <class T>
T safeMax(T m) {
  return m == -std::numeric_limits<T>::infinity() ? T(0) : m;
}
}  // namespace

template <class T>
Vec<T> rowLogSumExp(const Mat<T>& X, const Vec<T>& colShift) {
  Vec<T> out(X.rows());
  Eigen::Array<T, 1, Eigen::Dynamic> row(X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    row = X.row(i).array() + colShift.transpose().array();
    const T m = safeMax(row.maxCoeff());
    out(i) = m + std::log(exactExp(row - m).sum());
  }
  return out;
}

template <class T>
Vec<T> colLogSumExp(const Mat<T>& X, const Vec<T>& rowShift) {
  const T negInf = -std::numeric_limits<T>::infinity();
  Eigen::Array<T, 1, Eigen::Dynamic> colMax = Eigen::Array<T, 1, Eigen::Dynamic>::Constant(X.cols(), negInf);
  for (Eigen::Index i = 0; i < X.rows(); ++i) colMax = colMax.max(X.row(i).array() + rowShift(i));
  colMax = (colMax == negInf).select(T(0), colMax);
  Eigen::Array<T, 1, Eigen::Dynamic> sum = Eigen::Array<T, 1, Eigen::Dynamic>::Zero(X.cols());
  for (Eigen::Index i = 0; i < X.rows(); ++i) sum += exactExp(X.row(i).array() + rowShift(i) - colMax);
  return (colMax + sum.log()).transpose().matrix();
}

template <class T>
Mat<T> scores(const Mat<T>& Q, const Mat<T>& K) {
  return (Q * K.transpose()) / std::sqrt(T(Q.cols()));
}

void checkDenseSize(long long nQueries, long long nKeys, size_t bytesPerEntry, const char* what) {
  // The CPU reference keeps a few dense n_q × n_k matrices (scores, plan); cap their footprint well below
  // the memory of a small workstation instead of letting the allocator fail mid-way.
  constexpr double kLimitBytes = 6.0 * (1ull << 30);
  const double needed = 3.0 * double(nQueries) * double(nKeys) * double(bytesPerEntry);
  if (needed > kLimitBytes) {
    throw ResourceError(std::string(what) + " with " + std::to_string(nQueries) + " queries × " + std::to_string(nKeys) +
                        " keys needs about " + std::to_string(int(needed / (1 << 30) + 0.5)) +
                        " GiB for dense n×n matrices (limit 6 GiB on the CPU reference); use fewer tokens");
  }
}

template Vec<float> rowLogSumExp(const Mat<float>&, const Vec<float>&);
template Vec<double> rowLogSumExp(const Mat<double>&, const Vec<double>&);
template Vec<float> colLogSumExp(const Mat<float>&, const Vec<float>&);
template Vec<double> colLogSumExp(const Mat<double>&, const Vec<double>&);
template Mat<float> scores(const Mat<float>&, const Mat<float>&);
template Mat<double> scores(const Mat<double>&, const Mat<double>&);

}  // namespace tl
