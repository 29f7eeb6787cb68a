#include "analysis/plan_stats.h"

#include <cmath>
#include <limits>

#include "ops/marginals.h"

namespace tl {

RowEntropy rowEntropy(const MatD& plan) {
  if (plan.size() > 0 && plan.minCoeff() < 0)
    return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  // Rows with no mass (padded queries) carry no distribution and are skipped.
  std::vector<double> h;
  for (Eigen::Index i = 0; i < plan.rows(); ++i) {
    const double mass = plan.row(i).sum();
    if (!(mass > 0)) continue;
    double hi = 0;
    for (Eigen::Index j = 0; j < plan.cols(); ++j) {
      const double a = plan(i, j) / mass;  // entropy of the row's distribution, so rows that do not sum to 1 compare
      if (a > 0) hi -= a * std::log(a);
    }
    h.push_back(hi);
  }
  RowEntropy e;
  if (h.empty()) return e;
  for (double x : h) e.mean += x;
  e.mean /= double(h.size());
  for (double x : h) e.stddev += (x - e.mean) * (x - e.mean);
  e.stddev = std::sqrt(e.stddev / double(h.size()));
  return e;
}

MarginalErrors marginalErrors(const MatD& plan, const VecD& rowTarget, const VecD& colTarget) {
  return marginalErrorsFromSums<double>(plan.rowwise().sum(), rowTarget, plan.colwise().sum().transpose(), colTarget);
}

}  // namespace tl
