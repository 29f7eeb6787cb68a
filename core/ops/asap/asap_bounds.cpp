// Appendix B bounds on one square problem (asap_bounds.h).
#include "ops/asap/asap_bounds.h"

#include <algorithm>
#include <cmath>

namespace tl {
namespace {

// log ν_j = log μ_i = −log n on every token.
VecD uniformLog(Eigen::Index n) { return VecD::Constant(n, -std::log(double(n))); }

// Key-side closure v = K(u): columns of exp(X + u ⊕ v) sum to ν.
VecD keyClosure(const DenseScores<double>& X, const VecD& u) {
  return uniformLog(X.cols()) - X.colLogSumExp(u);
}

// Column conditionals p(i | j) = exp(X_ij + u_i − log Σ_k exp(X_kj + u_k)) at u, one column per key.
MatD columnConditionals(const DenseScores<double>& X, const VecD& u) {
  return X.plan(u, VecD(-X.colLogSumExp(u)), 1.0);
}

// Per key j, the variance of g under p(· | j). g is centred first: the variance does not change, and the
// second moment cancels less.
VecD columnVariances(const MatD& conditionals, const VecD& g) {
  const VecD centred = g.array() - g.mean();
  const VecD mean = conditionals.transpose() * centred;
  const VecD second = conditionals.transpose() * VecD(centred.array().square());
  return (second.array() - mean.array().square()).max(0.0);
}

// KL(P_a ‖ P_b) between one-sided plans: log P_a − log P_b = (u_a − u_b)_i + (v_a − v_b)_j, and P_a has rows
// r_a and columns ν.
double klBetween(const DenseScores<double>& X, const VecD& ua, const VecD& va, const VecD& ub, const VecD& vb) {
  const VecD rows = (ua + X.rowLogSumExp(va)).array().exp();
  const double nu = 1.0 / double(X.cols());
  return rows.dot(ua - ub) + nu * (va - vb).sum();
}

}  // namespace

TwoSidedRowBound twoSidedRowBound(const DenseScores<double>& X, const VecD& u0) {
  const VecD v1 = keyClosure(X, u0);
  const VecD u1 = uniformLog(X.rows()) - X.rowLogSumExp(v1);
  const VecD v2 = keyClosure(X, u1);
  const MatD P1 = X.plan(u1, v1, 1.0), P2 = X.plan(u1, v2, 1.0);
  const double mu = 1.0 / double(X.rows()), nu = 1.0 / double(X.cols());
  const VecD rho = P1.colwise().sum().transpose();
  TwoSidedRowBound b;
  b.eta = (nu / rho.array() - 1.0).abs().maxCoeff();
  b.rowErrorL1 = (P2.rowwise().sum().array() - mu).abs().sum();
  b.planGapL1 = (P2 - P1).cwiseAbs().sum();
  return b;
}

double pathVariance(const DenseScores<double>& X, const VecD& u, const VecD& uModel, double t) {
  const VecD gap = uModel - u;
  const VecD ut = u + t * gap;
  return columnVariances(columnConditionals(X, ut), gap).mean();  // ν_j = 1/n
}

OneSidedKl oneSidedKl(const DenseScores<double>& X, const VecD& u, const VecD& uModel, int pathPoints) {
  const VecD v = keyClosure(X, u), vModel = keyClosure(X, uModel);
  OneSidedKl r;
  r.reverse = std::max(klBetween(X, uModel, vModel, u, v), 0.0);  // ≥ 0 up to rounding
  r.forward = std::max(klBetween(X, u, v, uModel, vModel), 0.0);

  const VecD gap = uModel - u;
  const Eigen::Index n = X.rows();
  VecD supVariance = VecD::Zero(X.cols());
  double largestConditional = 0;
  for (int k = 0; k < pathPoints; ++k) {
    const double t = pathPoints > 1 ? double(k) / (pathPoints - 1) : 0.0;
    const MatD conditionals = columnConditionals(X, u + t * gap);
    supVariance = supVariance.cwiseMax(columnVariances(conditionals, gap));
    largestConditional = std::max(largestConditional, conditionals.maxCoeff());
  }
  r.varianceBound = 0.5 * supVariance.mean();
  r.kappa = double(n) * largestConditional;
  r.centredGapSquared = (gap.array() - gap.mean()).square().sum();
  r.kappaBound = r.kappa / (2.0 * double(n)) * r.centredGapSquared;
  return r;
}

}  // namespace tl
