// Registry operators as rank-decay normalisers of a given score matrix: oracles O-4, O-5, O-6, O-8, O-9,
// O-10, O-21 (with the tolerances of the rank-decay errata), float64.
#include "rankdecay/normaliser.h"

#include <gtest/gtest.h>

#include <Eigen/SVD>
#include <cmath>

#include "data/random.h"
#include "ops/registry.h"
#include "rankdecay/layer_statistics.h"
#include "rankdecay/residual.h"
#include "rankdecay/rank_decay_test_util.h"

namespace tl::rankdecay {
namespace {

MatD plan(const std::string& spec, const MatD& S) {
  return normaliseScores(*makeOperator(spec), S, noFeedback()).plan;
}

// Converged Sinkhorn (the theory's Sink_∞): an even budget far past convergence at these score sizes.
const char* kConverged = "sinkhorn:T=4000";

TEST(Normaliser, ScoresReachTheOperatorUnchanged) {
  SeededRandom rng(1);
  const MatD S = gaussian(rng, 9, 9);
  const MatD A = plan("softmax", S);
  MatD expected = (S.colwise() - S.rowwise().maxCoeff()).array().exp();
  expected = expected.array().colwise() / expected.rowwise().sum().array();
  EXPECT_LE((A - expected).cwiseAbs().maxCoeff(), 1e-15);
}

TEST(Normaliser, SoftmaxIsSinkhornWithOneStep) {  // O-4, tolerance 1e-15·max(4, max|S|)
  SeededRandom rng(2);
  for (double sd : {1.0, 30.0}) {
    const MatD S = gaussian(rng, 50, 50, sd);
    const double tol = 1e-15 * std::max(4.0, S.cwiseAbs().maxCoeff());
    const MatD softmax = plan("softmax", S);
    EXPECT_LE((softmax - plan("sinkhorn:T=1", S)).cwiseAbs().maxCoeff(), tol);
    EXPECT_LE((softmax.rowwise().sum().array() - 1).abs().maxCoeff(), tol);
  }
}

TEST(Normaliser, SinkhornBudgetParityDecidesTheExactSide) {  // O-5
  SeededRandom rng(3);
  const MatD S = gaussian(rng, 10, 10);
  const MatD even = plan("sinkhorn:T=10", S), odd = plan("sinkhorn:T=11", S);
  EXPECT_LE((even.colwise().sum().array() - 1).abs().maxCoeff(), 1e-14);
  EXPECT_LE((odd.rowwise().sum().array() - 1).abs().maxCoeff(), 1e-14);
  const double rowError10 = (even.rowwise().sum().array() - 1).abs().maxCoeff();
  EXPECT_GT(rowError10, 1e-6);  // K = 10 leaves a visible row error (errata: 2e-5 … 1.5e-3)
  EXPECT_LT(rowError10, 1e-2);
  EXPECT_LE((plan("sinkhorn:T=50", S).rowwise().sum().array() - 1).abs().maxCoeff(), 1e-10);
}

TEST(Normaliser, RowShiftsAlwaysColumnShiftsOnlyWhenConverged) {  // O-6
  SeededRandom rng(4);
  const int n = 10;
  const MatD S = gaussian(rng, n, n);
  const MatD rowShift = gaussian(rng, n, 1) * MatD::Ones(1, n), colShift = MatD::Ones(n, 1) * gaussian(rng, 1, n);
  for (const char* spec : {"softmax", "sinkhorn:T=2", "sinkhorn:T=7", "sinkhorn:T=50"})
    EXPECT_LE((plan(spec, S + rowShift) - plan(spec, S)).cwiseAbs().maxCoeff(), 1e-14) << spec;
  EXPECT_LE((plan(kConverged, S + colShift) - plan(kConverged, S)).cwiseAbs().maxCoeff(), 1e-11);
  EXPECT_GT((plan("softmax", S + colShift) - plan("softmax", S)).cwiseAbs().maxCoeff(), 1e-2);
}

TEST(Normaliser, ConvergedSinkhornHasUnitTopSingularValue) {  // O-8 (scores of variance 4)
  SeededRandom rng(5);
  for (int n : {5, 50}) {
    const MatD P = plan(kConverged, gaussian(rng, n, n, 2.0));
    Eigen::BDCSVD<MatD> svd(P);
    EXPECT_NEAR(svd.singularValues()(0), 1.0, 1e-12) << n;
    EXPECT_NEAR(svd.singularValues()(1), spectralNorm(P - MatD::Constant(n, n, 1.0 / n)), 1e-12) << n;
  }
}

// Sink(tY) = J/n + (t/n) Q(Y) + O(t²) in attention scale; the paper prints (t/n²) Q(Y) (erratum E1).
TEST(Normaliser, FirstOrderExpansionHasSlopeOneOverN) {  // O-9, denominators ‖D‖ as the errata name them
  SeededRandom rng(6);
  const double t = 1e-3;
  for (int n : {4, 16, 64}) {
    const MatD Y = gaussian(rng, n, n);
    const MatD D = plan(kConverged, t * Y) - MatD::Constant(n, n, 1.0 / n);
    const MatD QY = projectZeroMarginals(Y);
    EXPECT_LE(spectralNorm(D - (t / n) * QY) / spectralNorm((t / n) * QY), 5e-3) << n;
    const double printedError = spectralNorm(D - (t / (double(n) * n)) * QY) / spectralNorm(D);
    EXPECT_GE(printedError, 0.5) << n;
    EXPECT_NEAR(printedError, 1 - 1.0 / n, 5e-3) << n;
  }
}

TEST(Normaliser, ConvergedEntriesStayWithinTheExponentialBand) {  // O-10
  SeededRandom rng(7);
  for (int k = 0; k < 40; ++k) {
    const int n = 3 + k % 12;
    const MatD A = projectZeroMarginals(gaussian(rng, n, n, 0.5 + 0.05 * k));
    const double a = A.cwiseAbs().maxCoeff();
    const MatD P = plan(kConverged, A);
    EXPECT_GE(P.minCoeff(), std::exp(-4 * a) / n * (1 - 1e-12));
    EXPECT_LE(P.maxCoeff(), std::exp(4 * a) / n * (1 + 1e-12));
  }
}

// The per-layer attention strip: normalised row entropy (and effective rank) of J/n, a permutation and
// converged Sinkhorn, through attentionStatistics as the view shows them.
TEST(Normaliser, EntropyOfUniformPermutationAndConvergedSinkhorn) {  // O-21
  SeededRandom rng(8);
  const int n = 16;
  const double logn = std::log(double(n));
  const MatD A = projectZeroMarginals(gaussian(rng, n, n, 0.1));
  MatD permutation = MatD::Zero(n, n);
  for (int i = 0; i < n; ++i) permutation(i, (5 * i + 3) % n) = 1;
  AttentionRecord record = AttentionRecord::sized(3, 1, 1);
  record.attention = {MatD::Constant(n, n, 1.0 / n), permutation, plan(kConverged, A)};
  const std::vector<AttentionLayerStats> stats = attentionStatistics(record, noFeedback());
  EXPECT_NEAR(stats[0].entropy * logn, logn, 1e-14);
  EXPECT_NEAR(stats[0].effectiveRank, 1.0, 1e-12);
  EXPECT_EQ(stats[1].entropy, 0.0);
  EXPECT_NEAR(stats[1].effectiveRank, double(n), 1e-12);
  const double a = A.cwiseAbs().maxCoeff();
  EXPECT_GE(stats[2].entropy * logn, logn - 4 * a);
  EXPECT_LT(stats[2].entropy, 1.0);
}

}  // namespace
}  // namespace tl::rankdecay
