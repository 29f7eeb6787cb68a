#include "analysis/plan_distance.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "common/errors.h"

namespace tl {
namespace {

void requireSameShape(const MatD& a, const MatD& b, const char* what) {
  if (a.rows() != b.rows() || a.cols() != b.cols())
    throw InvalidArgument(std::string(what) + ": shapes differ (" + std::to_string(a.rows()) + "x" +
                          std::to_string(a.cols()) + " vs " + std::to_string(b.rows()) + "x" +
                          std::to_string(b.cols()) + "); compare results on the same input");
}

}  // namespace

double relativeFrobenius(const MatD& a, const MatD& b) {
  requireSameShape(a, b, "relative Frobenius distance");
  const double diff = (a - b).norm(), scale = b.norm();
  if (scale > 0) return diff / scale;
  return diff == 0 ? 0 : std::numeric_limits<double>::infinity();
}

double maxAbsDifference(const MatD& a, const MatD& b) {
  requireSameShape(a, b, "max abs difference");
  return a.size() == 0 ? 0 : (a - b).cwiseAbs().maxCoeff();
}

double rmsDifference(const MatD& a, const MatD& b) {
  requireSameShape(a, b, "rms difference");
  return a.size() == 0 ? 0 : std::sqrt((a - b).squaredNorm() / double(a.size()));
}

double meanRowKl(const MatD& a, const MatD& b) {
  requireSameShape(a, b, "mean row KL");
  // A map with negative entries (diff) has rows that are no distributions: KL is not defined for them.
  if ((a.size() > 0 && a.minCoeff() < 0) || (b.size() > 0 && b.minCoeff() < 0))
    return std::numeric_limits<double>::quiet_NaN();
  double total = 0;
  int rows = 0;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    const double massA = a.row(i).sum(), massB = b.row(i).sum();
    if (!(massA > 0) || !(massB > 0)) continue;
    double kl = 0;
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      const double p = a(i, j) / massA, q = b(i, j) / massB;
      if (!(p > 0)) continue;
      if (!(q > 0)) return std::numeric_limits<double>::infinity();
      kl += p * std::log(p / q);
    }
    total += std::max(kl, 0.0);  // rounding can leave −1e-17 for identical rows; KL itself is ≥ 0
    ++rows;
  }
  return rows ? total / rows : 0;
}

}  // namespace tl
