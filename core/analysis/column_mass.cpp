#include "analysis/column_mass.h"

#include <algorithm>
#include <string>
#include <vector>

#include "common/errors.h"

namespace tl {

double giniCoefficient(const VecD& x) {
  std::vector<double> sorted(x.data(), x.data() + x.size());
  std::sort(sorted.begin(), sorted.end());
  const double m = double(sorted.size());
  double total = 0, weighted = 0;
  for (size_t k = 0; k < sorted.size(); ++k) {
    total += sorted[k];
    weighted += double(k + 1) * sorted[k];
  }
  if (!(total > 0)) return 0;
  return 2 * weighted / (m * total) - (m + 1) / m;
}

ColumnMass columnMass(const MatD& plan, const VecD& colTarget) {
  return columnMassOfSums(plan.colwise().sum().transpose(), colTarget);
}

ColumnMass columnMassOfSums(const VecD& sums, const VecD& colTarget) {
  ColumnMass c;
  if (sums.size() == 0) return c;
  c.maxSum = sums.maxCoeff();
  if (colTarget.size() == 0) {
    c.gini = giniCoefficient(sums);
    return c;
  }
  if (colTarget.size() != sums.size())
    throw InvalidArgument("column mass: " + std::to_string(colTarget.size()) + " column targets for a plan with " +
                          std::to_string(sums.size()) + " columns");
  std::vector<double> active;
  for (Eigen::Index j = 0; j < sums.size(); ++j)
    if (colTarget(j) > 0) active.push_back(sums(j));
  c.gini = giniCoefficient(Eigen::Map<const VecD>(active.data(), Eigen::Index(active.size())));
  return c;
}

}  // namespace tl
