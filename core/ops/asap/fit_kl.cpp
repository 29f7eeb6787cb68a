// ASAP-KL: forward KL from the teacher's one-sided plan to ASAP-0's (docs/operators/asap.md#kl). Strongly
// convex (λ_min(∇²J) ≥ λ_B), so Newton from the LS solution converges; L-BFGS takes over if a Newton step
// cannot make progress.
#include <Eigen/Cholesky>
#include <cmath>
#include <deque>
#include <string>

#include "common/errors.h"
#include "ops/asap/asap_fit.h"

namespace tl {
namespace {

// One example's data term, its gradient Φᵀ(P_β1 − r) and Hessian (1/eps) Φᵀ[diag(P_β1) − P_J diag(ν_J)⁻¹ P_Jᵀ] Φ.
void addExample(const FitExample& e, const VecD& beta, bool withHessian, KlValue& total) {
  const VecD fitted = e.phi * beta;
  const VecD ut = (fitted - e.a) / e.eps;
  const VecD columnLse = e.X.colLogSumExp(ut);  // LSE_i((S_ij + (Φβ)_i − a_i)/eps)
  double data = 0;
  for (Eigen::Index j = 0; j < columnLse.size(); ++j)
    if (std::isfinite(e.logNu(j))) data += std::exp(e.logNu(j)) * columnLse(j);
  total.objective += e.eps * data - e.teacherRowMass.dot(fitted);

  const VecD vt = e.logNu - columnLse;  // key closure: −inf on padded keys, whose columns are exactly 0
  const MatD P = e.X.plan(ut, vt, 1.0);  // transport scale
  const VecD rowMass = P.rowwise().sum();
  total.gradient.noalias() += e.phi.transpose() * (rowMass - e.teacherRowMass);
  if (!withHessian) return;
  const MatD W = e.phi.transpose() * P;  // L × n_k
  MatD hessian = e.phi.transpose() * rowMass.asDiagonal() * e.phi;
  for (Eigen::Index j = 0; j < W.cols(); ++j)
    if (std::isfinite(e.logNu(j))) hessian.noalias() -= W.col(j) * W.col(j).transpose() / std::exp(e.logNu(j));
  total.hessian += hessian / e.eps;
}

// Backtracking (Armijo) along `direction`; returns the accepted step or 0 when none decreases J.
double backtrack(const std::vector<FitExample>& examples, double lambdaB, const VecD& beta, const KlValue& at,
                 const VecD& direction) {
  const double slope = at.gradient.dot(direction);
  if (!(slope < 0)) return 0;
  // Rounding slack: near the optimum J changes below its own last bits.
  const double slack = 1e-14 * std::max(1.0, std::abs(at.objective));
  for (double step = 1.0; step > 1e-12; step *= 0.5) {
    const double value = klObjective(examples, beta + step * direction, lambdaB, false).objective;
    if (value <= at.objective + 1e-4 * step * slope + slack) return step;
  }
  return 0;
}

// L-BFGS (two-loop recursion, memory 10) from `fit.beta`; updates `fit` in place.
void lbfgs(const std::vector<FitExample>& examples, double lambdaB, double tolerance, KlFit& fit,
           Feedback& feedback) {
  constexpr int kMemory = 10, kMaxSteps = 2000;
  std::deque<std::pair<VecD, VecD>> history;  // (s, y)
  KlValue at = klObjective(examples, fit.beta, lambdaB, false);
  for (int step = 0; step < kMaxSteps && at.gradient.norm() >= tolerance; ++step) {
    feedback.throwIfCanceled();
    VecD q = at.gradient;
    std::vector<double> alpha;
    for (auto it = history.rbegin(); it != history.rend(); ++it) {
      alpha.push_back(it->first.dot(q) / it->second.dot(it->first));
      q -= alpha.back() * it->second;
    }
    // Initial scaling γ = sᵀy / yᵀy (the plain gradient before any pair exists).
    if (!history.empty()) q *= history.back().first.dot(history.back().second) / history.back().second.squaredNorm();
    size_t k = alpha.size();
    for (const auto& [s, y] : history) {
      const double b = y.dot(q) / y.dot(s);
      q += s * (alpha[--k] - b);
    }
    const VecD direction = -q;
    const double t = backtrack(examples, lambdaB, fit.beta, at, direction);
    if (t == 0) break;
    const VecD next = fit.beta + t * direction;
    KlValue nextValue = klObjective(examples, next, lambdaB, false);
    const VecD s = next - fit.beta, y = nextValue.gradient - at.gradient;
    if (s.dot(y) > 0) {
      history.emplace_back(s, y);
      if (int(history.size()) > kMemory) history.pop_front();
    }
    fit.beta = next;
    at = std::move(nextValue);
    ++fit.iterations;
  }
  fit.objective = at.objective;
  fit.gradientNorm = at.gradient.norm();
}

}  // namespace

KlValue klObjective(const std::vector<FitExample>& examples, const VecD& beta, double lambdaB, bool withHessian) {
  if (examples.empty()) throw InvalidArgument("asap fit: no calibration examples");
  const Eigen::Index L = beta.size();
  KlValue total;
  total.gradient = VecD::Zero(L);
  if (withHessian) total.hessian = MatD::Zero(L, L);
  for (const FitExample& e : examples) addExample(e, beta, withHessian, total);
  // Average over head instances (each counts equally, padded or not), then the ridge (λ_B/2)‖β‖².
  const double N = double(examples.size());
  total.objective = total.objective / N + 0.5 * lambdaB * beta.squaredNorm();
  total.gradient = total.gradient / N + lambdaB * beta;
  if (withHessian) total.hessian = total.hessian / N + lambdaB * MatD::Identity(L, L);
  return total;
}

KlFit fitKl(const std::vector<FitExample>& examples, const VecD& start, double lambdaB, Feedback& feedback,
            double gradientTolerance, int maxNewtonSteps) {
  if (!(lambdaB > 0) || !std::isfinite(lambdaB))
    throw InvalidArgument("asap fit: the KL fit needs lambda_b > 0 (its strong convexity comes from the ridge)");
  KlFit fit;
  fit.beta = start;
  fit.method = "newton";
  KlValue at = klObjective(examples, fit.beta, lambdaB, true);
  bool stalled = false;
  while (at.gradient.norm() >= gradientTolerance && fit.iterations < maxNewtonSteps) {
    feedback.throwIfCanceled();
    feedback.setProgress(0, "KL Newton step " + std::to_string(fit.iterations + 1) + ", |grad| " +
                                std::to_string(at.gradient.norm()));
    const Eigen::LLT<MatD> cholesky(at.hessian);
    const double t = cholesky.info() == Eigen::Success
                         ? backtrack(examples, lambdaB, fit.beta, at, cholesky.solve(-at.gradient))
                         : 0.0;
    if (t == 0) {
      stalled = true;
      break;
    }
    fit.beta += t * VecD(cholesky.solve(-at.gradient));
    at = klObjective(examples, fit.beta, lambdaB, true);
    ++fit.iterations;
  }
  fit.objective = at.objective;
  fit.gradientNorm = at.gradient.norm();
  if (stalled || fit.gradientNorm >= gradientTolerance) {
    fit.method = "newton+lbfgs";
    lbfgs(examples, lambdaB, gradientTolerance, fit, feedback);
  }
  fit.converged = fit.gradientNorm < gradientTolerance;
  return fit;
}

}  // namespace tl
