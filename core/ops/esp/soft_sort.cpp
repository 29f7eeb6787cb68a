#include "ops/esp/soft_sort.h"

#include <algorithm>
#include <cmath>

namespace tl {

template <class T>
Mat<T> softSort(const Vec<T>& values, double temp) {
  Vec<T> sorted = values;
  std::sort(sorted.data(), sorted.data() + sorted.size());
  const T t = T(temp);  // > 0 in T: the schema keeps sort_temp >= 1e-30
  Mat<T> P(values.size(), values.size());
  for (Eigen::Index r = 0; r < values.size(); ++r) {
    // Scalar std::exp so that far entries are exactly 0 (docs/conventions.md#log-domain), not the denormal
    // where Eigen's vectorised exp stops.
    P.row(r) = (-(values.array() - sorted(r)).square() / t).unaryExpr([](T x) { return std::exp(x); }).transpose();
    P.row(r) /= P.row(r).sum();
  }
  return P;
}

template Mat<float> softSort(const Vec<float>&, double);
template Mat<double> softSort(const Vec<double>&, double);

}  // namespace tl
