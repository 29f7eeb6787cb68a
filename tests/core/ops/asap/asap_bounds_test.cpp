// The Appendix B bounds the ASAP view draws (ops/asap/asap_bounds.h), on random problems against independent
// computations: the B.34 chain ‖P2·1 − μ‖₁ ≤ ‖P2 − P1‖₁ ≤ η with the ASAP operator's own plan for the row sums
// (and the per-row form |n·(P2·1)_i − 1| ≤ η that the view draws); the one-sided KLs against Σ P log(P/P') of
// the dense ASAP-0 plans, their integral identities (B.51/B.52, oracle 21: 2001-point trapezoid, 1e-6), and
// KL ≤ B.53 ≤ B.54 (oracle 22).
#include "ops/asap/asap_bounds.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ops/asap/asap.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;

struct Problem {
  AttentionInput<double> input;
  double eps;
};

Problem randomProblem(int n, int d, double eps, uint64_t seed) {
  Problem p;
  p.input.Q = gaussian(n, d, seed);
  p.input.K = gaussian(n, d, seed + 1);
  p.eps = eps;
  return p;
}

// The attention plan of the ASAP operator started from the score-coordinate dual eps·ut.
MatD asapPlanFrom(const Problem& p, const VecD& ut, AsapVariant variant) {
  AsapParams params;
  params.variant = variant;
  params.closing = Closing::Column;
  params.eps = p.eps;
  params.maskMode = MaskMode::Subsequence;
  params.dual = p.eps * ut;
  return asapAttention(p.input, params).plan.dense();
}

TEST(AsapBounds, TwoSidedRowErrorObeysB34OnRandomProblems) {
  double tightest = 0;  // the largest share of η a row error reaches
  for (int n : {2, 3, 17, 64})
    for (int d : {1, 8})
      for (double eps : {0.3, 1.0})
        for (double spread : {0.0, 1.0, 100.0}) {
          const Problem p = randomProblem(n, d, eps, uint64_t(n * 100 + d));
          const DenseScores<double> X(p.input.Q, p.input.K, eps);
          const VecD u0 = spread * gaussian(n, 1, uint64_t(n + d)).col(0);
          const TwoSidedRowBound b = twoSidedRowBound(X, u0);
          EXPECT_LE(b.rowErrorL1, b.planGapL1 + 1e-12) << n << ' ' << d << ' ' << eps << ' ' << spread;
          EXPECT_LE(b.planGapL1, b.eta + 1e-12) << n << ' ' << d << ' ' << eps << ' ' << spread;
          const MatD A = asapPlanFrom(p, u0, AsapVariant::TwoSided);
          const VecD rowErrors = (A.rowwise().sum().array() - 1.0).abs();
          EXPECT_LE(rowErrors.maxCoeff(), b.eta + 1e-12) << n << ' ' << d << ' ' << eps << ' ' << spread;
          EXPECT_NEAR(rowErrors.sum() / n, b.rowErrorL1, 1e-12);  // the same row sums, other code
          if (b.eta > 1e-8) tightest = std::max(tightest, rowErrors.maxCoeff() / b.eta);
        }
  // Not vacuous: somewhere a row comes within a factor 2 of the bound.
  EXPECT_GT(tightest, 0.5);
}

TEST(AsapBounds, RowBoundVanishesAtTheFixedPoint) {
  // From Sinkhorn's converged dual, ASAP is the balanced plan: η and the row errors go to rounding.
  const Problem p = randomProblem(17, 8, 1.0, 5);
  const DenseScores<double> X(p.input.Q, p.input.K, 1.0);
  VecD u = VecD::Zero(17), v = VecD::Zero(17);
  const double logMarginal = -std::log(17.0);
  for (int t = 0; t < 2000; ++t) {
    u = (logMarginal - X.rowLogSumExp(v).array()).matrix();
    v = (logMarginal - X.colLogSumExp(u).array()).matrix();
  }
  const TwoSidedRowBound b = twoSidedRowBound(X, u);
  EXPECT_LT(b.eta, 1e-12);
  EXPECT_LT(b.rowErrorL1, 1e-12);
}

// Σ P log(P/P') over the dense plans (transport scale).
double denseKl(const MatD& A, const MatD& B, double n) {
  double kl = 0;
  for (Eigen::Index i = 0; i < A.rows(); ++i)
    for (Eigen::Index j = 0; j < A.cols(); ++j)
      if (A(i, j) > 0) kl += A(i, j) / n * std::log(A(i, j) / B(i, j));
  return kl;
}

TEST(AsapBounds, OneSidedKlMatchesTheDensePlansAndTheIntegralIdentities) {
  for (int n : {3, 17, 64})
    for (double eps : {0.3, 1.0}) {
      const Problem p = randomProblem(n, 8, eps, uint64_t(7 * n));
      const DenseScores<double> X(p.input.Q, p.input.K, eps);
      const VecD u = gaussian(n, 1, 1).col(0), uModel = u + 0.5 * gaussian(n, 1, 2).col(0);
      const OneSidedKl kl = oneSidedKl(X, u, uModel);
      const MatD P = asapPlanFrom(p, u, AsapVariant::Asap0), PModel = asapPlanFrom(p, uModel, AsapVariant::Asap0);
      EXPECT_NEAR(kl.reverse, denseKl(PModel, P, n), 1e-12) << n << ' ' << eps;
      EXPECT_NEAR(kl.forward, denseKl(P, PModel, n), 1e-12) << n << ' ' << eps;
      EXPECT_GT(kl.reverse, 0);
      EXPECT_GT(kl.forward, 0);

      // B.51/B.52 by the trapezoid rule on 2001 points.
      constexpr int kPoints = 2001;
      double reverse = 0, forward = 0;
      for (int k = 0; k < kPoints; ++k) {
        const double t = double(k) / (kPoints - 1), weight = (k == 0 || k == kPoints - 1 ? 0.5 : 1.0) / (kPoints - 1);
        const double variance = pathVariance(X, u, uModel, t);
        reverse += weight * t * variance;
        forward += weight * (1 - t) * variance;
      }
      EXPECT_NEAR(kl.reverse, reverse, 1e-6) << n << ' ' << eps;
      EXPECT_NEAR(kl.forward, forward, 1e-6) << n << ' ' << eps;

      EXPECT_LE(std::max(kl.forward, kl.reverse), kl.varianceBound) << n << ' ' << eps;
      EXPECT_LE(kl.varianceBound, kl.kappaBound) << n << ' ' << eps;
      EXPECT_GE(kl.kappa, 1.0);
      EXPECT_LE(kl.kappa, double(n));
    }
}

TEST(AsapBounds, KlIsZeroForEqualPlans) {
  // u and u + c give the same plan (B.8): both KLs, the variances and the centred gap vanish.
  const Problem p = randomProblem(17, 8, 0.5, 3);
  const DenseScores<double> X(p.input.Q, p.input.K, 0.5);
  const VecD u = gaussian(17, 1, 4).col(0);
  const OneSidedKl kl = oneSidedKl(X, u, (u.array() + 3.7).matrix());
  EXPECT_LT(kl.forward, 1e-13);
  EXPECT_LT(kl.reverse, 1e-13);
  EXPECT_LT(kl.varianceBound, 1e-20);
  EXPECT_LT(kl.centredGapSquared, 1e-24);
}

}  // namespace
}  // namespace tl
