#include "analysis/rank.h"

#include <Eigen/SVD>
#include <algorithm>
#include <cmath>

namespace tl {

PlanRank planRank(const MatD& plan, double roundoff) {
  PlanRank r;
  if (plan.size() == 0) return r;
  // Singular values only (no U, V): divide-and-conquer SVD, descending.
  const VecD sigma = Eigen::BDCSVD<MatD>(plan).singularValues();
  const double total = sigma.sum();
  if (!(total > 0)) return r;

  r.tolerance = double(std::max(plan.rows(), plan.cols())) * roundoff * sigma(0);
  double entropy = 0;
  for (Eigen::Index k = 0; k < sigma.size(); ++k) {
    if (sigma(k) > r.tolerance) ++r.numerical;
    const double p = sigma(k) / total;
    if (p > 0) entropy -= p * std::log(p);  // 0 log 0 = 0
  }
  r.effective = std::exp(entropy);
  return r;
}

}  // namespace tl
