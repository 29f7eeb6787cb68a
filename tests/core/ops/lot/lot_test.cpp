// LOT attention against the forward checks of docs/operators/lot.md#checks (float64), plus an independent
// plain-scaling reference of docs/operators/lot.md#definition written here, never taken from core/.
// Defaults: N = 64, r = 8, d = 16, Q, K, V ~ N(0, 1), Z ~ N(0, 1/d), θ ~ N(0, 0.25), eps = 1;
// "converged" means T ≥ 201. Pivots are given explicitly (pivot_init = file) unless a test is about k-means.
#include "ops/lot/lot.h"

#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/SVD>
#include <algorithm>
#include <numeric>

#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;
using test::referenceRowSoftmax;
using test::referenceScores;

struct LotCase {
  AttentionInput<double> in;
  MatD Z;       // r×d pivot locations
  VecD theta;   // r mass logits
};

LotCase makeCase(int n = 64, int r = 8, int d = 16, uint64_t seed = 1) {
  LotCase c;
  c.in.Q = gaussian(n, d, seed);
  c.in.K = gaussian(n, d, seed + 100);
  c.in.V = gaussian(n, d, seed + 200);
  c.Z = gaussian(r, d, seed + 300, 1.0 / std::sqrt(double(d)));
  c.theta = gaussian(r, 1, seed + 400, 0.5);
  return c;
}

LotParams givenPivots(const MatD& Z, const VecD& theta, int T, double eps) {
  LotParams p;
  p.r = int(Z.rows());
  p.T = T;
  p.eps = eps;
  p.pivotInit = PivotInit::File;
  p.pivots = Z;
  p.massLogits = theta;
  return p;
}
LotParams givenPivots(const LotCase& c, int T, double eps = 1.0) { return givenPivots(c.Z, c.theta, T, eps); }

VecD rowSums(const MatD& M) { return M.rowwise().sum(); }
VecD colSums(const MatD& M) { return M.colwise().sum().transpose(); }
double maxAbs(const MatD& M) { return M.cwiseAbs().maxCoeff(); }

// w = softmax(θ/τ) (docs/operators/lot.md#definition).
VecD referenceMasses(const VecD& theta, double tau) {
  const VecD e = ((theta.array() - theta.maxCoeff()) / tau).exp();
  return e / e.sum();
}

// Plain scaling form of one entropic problem (P = diag(u) exp(S/eps) diag(v)): from exp(S/eps)
// (row maxima subtracted, which the first row scaling absorbs), alternately scale rows to a, columns to b.
MatD referenceScaling(const MatD& S, const VecD& a, const VecD& b, double eps, int T) {
  MatD P(S.rows(), S.cols());
  for (Eigen::Index i = 0; i < S.rows(); ++i) P.row(i) = ((S.row(i).array() - S.row(i).maxCoeff()) / eps).exp();
  for (int t = 1; t <= T; ++t) {
    if (t % 2 == 1)
      P = (a.array() / rowSums(P).array()).matrix().asDiagonal() * P;
    else
      P = P * (b.array() / colSums(P).array()).matrix().asDiagonal();
  }
  return P;
}

struct ReferenceLot {
  MatD P1, P2, A;
  VecD w;
};

// docs/operators/lot.md#definition: S1 = Q Zᵀ/√d, S2 = Z Kᵀ/√d, P1 ∈ Π(1/n, w), P2 ∈ Π(w, 1/n),
// A = n·P1 diag(1/w) P2.
ReferenceLot referenceLot(const LotCase& c, int T, double eps, double tau = 0.5) {
  const double nq = double(c.in.Q.rows()), nk = double(c.in.K.rows());
  ReferenceLot ref;
  ref.w = referenceMasses(c.theta, tau);
  ref.P1 = referenceScaling(referenceScores(c.in.Q, c.Z), VecD::Constant(c.in.Q.rows(), 1 / nq), ref.w, eps, T);
  ref.P2 = referenceScaling(referenceScores(c.Z, c.in.K), ref.w, VecD::Constant(c.in.K.rows(), 1 / nk), eps, T);
  ref.A = nq * ref.P1 * ref.w.cwiseInverse().asDiagonal() * ref.P2;
  return ref;
}

MatD extra(const PlanResult<double>& r, const std::string& name) {
  const auto it = r.extras.find(name);
  EXPECT_NE(it, r.extras.end()) << name;
  return it == r.extras.end() ? MatD() : it->second;
}

VecD singularValues(const MatD& A) { return Eigen::JacobiSVD<Eigen::MatrixXd>(A).singularValues(); }

// The glued coupling of the operator equals the plain scaling reference, both factors and A.
TEST(Lot, EqualsPlainScalingReference) {
  for (int T : {1, 2, 3, 5, 10})
    for (double eps : {0.5, 1.0, 2.0}) {
      SCOPED_TRACE(::testing::Message() << "T=" << T << " eps=" << eps);
      const LotCase c = makeCase(64, 8, 16, 10 + T);
      const auto r = lotAttention(c.in, givenPivots(c, T, eps));
      const ReferenceLot ref = referenceLot(c, T, eps);
      EXPECT_TRUE(matricesNear(extra(r, "lot_P1"), ref.P1, 1e-14));
      EXPECT_TRUE(matricesNear(extra(r, "lot_P2"), ref.P2, 1e-14));
      EXPECT_TRUE(matricesNear(extra(r, "lot_pivot_masses"), ref.w, 1e-15));
      EXPECT_TRUE(matricesNear(r.plan.dense(), ref.A, 1e-12));
      ASSERT_TRUE(r.output.has_value());
      EXPECT_TRUE(matricesNear(*r.output, ref.A * *c.in.V, 1e-12));
    }
}

// The duals reproduce the factors in score coordinates: P1 = exp((S1 + u1 ⊕ v1)/eps), P2 likewise
// (docs/conventions.md#duals), and the result declares which scale it holds and what it carries.
TEST(Lot, DualsReproduceFactorsAndExtrasHaveTheirShapes) {
  const LotCase c = makeCase(20, 5, 6, 3);
  const double eps = 0.7;
  const auto r = lotAttention(c.in, givenPivots(c, 4, eps));
  const MatD S1 = referenceScores(c.in.Q, c.Z), S2 = referenceScores(c.Z, c.in.K);
  const VecD u1 = extra(r, "lot_u1"), v1 = extra(r, "lot_v1"), u2 = extra(r, "lot_u2"), v2 = extra(r, "lot_v2");
  ASSERT_EQ(u1.size(), 20);
  ASSERT_EQ(v1.size(), 5);
  ASSERT_EQ(u2.size(), 5);
  ASSERT_EQ(v2.size(), 20);
  const MatD P1 = (((S1.colwise() + u1).rowwise() + v1.transpose()) / eps).array().exp().matrix();
  const MatD P2 = (((S2.colwise() + u2).rowwise() + v2.transpose()) / eps).array().exp().matrix();
  EXPECT_TRUE(matricesNear(extra(r, "lot_P1"), P1, 1e-15));
  EXPECT_TRUE(matricesNear(extra(r, "lot_P2"), P2, 1e-15));
  EXPECT_TRUE(matricesNear(extra(r, "lot_pivots"), c.Z, 0.0));
  EXPECT_EQ(r.plan.rows(), 20);
  EXPECT_EQ(r.plan.cols(), 20);
  EXPECT_EQ(r.u.size(), 0) << "LOT has no n×n duals";
  EXPECT_TRUE(matricesNear(r.rowTarget, VecD::Ones(20), 0.0));
  EXPECT_TRUE(matricesNear(r.colTarget, VecD::Ones(20), 0.0));
  EXPECT_FALSE(r.massMismatch);
}

// Odd T makes A exactly row-stochastic (to 1e-15·max(1, max|S|/eps)), P1 1 = 1/N, P2 1 = w.
TEST(Lot, T1_RowsExactForOddBudget) {
  const LotCase c = makeCase();
  const int N = 64;
  const VecD w = referenceMasses(c.theta, 0.5);
  for (int T : {1, 3, 5, 11})
    for (double eps : {0.05, 0.1, 1.0, 5.0}) {
      SCOPED_TRACE(::testing::Message() << "T=" << T << " eps=" << eps);
      const auto r = lotAttention(c.in, givenPivots(c, T, eps));
      const MatD P1 = extra(r, "lot_P1"), P2 = extra(r, "lot_P2");
      const double maxS = std::max(maxAbs(referenceScores(c.in.Q, c.Z)), maxAbs(referenceScores(c.Z, c.in.K)));
      const double tol = 1e-15 * std::max(1.0, maxS / eps);
      const VecD rowsFromFactors = N * P1 * (w.cwiseInverse().asDiagonal() * rowSums(P2));
      EXPECT_TRUE(matricesNear(rowsFromFactors, VecD::Ones(N), 1e-12));
      EXPECT_TRUE(matricesNear(rowSums(P1), VecD::Constant(N, 1.0 / N), tol));
      EXPECT_TRUE(matricesNear(rowSums(P2), w, tol));
      EXPECT_LE(r.errors.rowMax, 1e-12);
    }
}

// Even T makes A exactly column-stochastic, P1ᵀ1 = w, P2ᵀ1 = 1/N.
TEST(Lot, T2_ColumnsExactForEvenBudget) {
  const LotCase c = makeCase();
  const int N = 64;
  const VecD w = referenceMasses(c.theta, 0.5);
  for (int T : {2, 4, 10})
    for (double eps : {0.1, 1.0, 5.0}) {
      SCOPED_TRACE(::testing::Message() << "T=" << T << " eps=" << eps);
      const auto r = lotAttention(c.in, givenPivots(c, T, eps));
      EXPECT_TRUE(matricesNear(colSums(r.plan.dense()), VecD::Ones(N), 1e-12));
      EXPECT_TRUE(matricesNear(colSums(extra(r, "lot_P1")), w, 1e-15 * std::max(1.0, 10 / eps)));
      EXPECT_TRUE(matricesNear(colSums(extra(r, "lot_P2")), VecD::Constant(N, 1.0 / N), 1e-15 * std::max(1.0, 10 / eps)));
      EXPECT_LE(r.errors.colMax, 1e-12);
    }
}

// Converged plans are doubly stochastic to 1e-10, and 201 steps beat 5 on the inexact (column) side.
TEST(Lot, T3_ConvergesForModerateEps) {
  const LotCase c = makeCase();
  for (double eps : {0.5, 1.0, 5.0}) {
    SCOPED_TRACE(::testing::Message() << "eps=" << eps);
    const auto converged = lotAttention(c.in, givenPivots(c, 201, eps));
    EXPECT_TRUE(matricesNear(rowSums(converged.plan.dense()), VecD::Ones(64), 1e-10));
    EXPECT_TRUE(matricesNear(colSums(converged.plan.dense()), VecD::Ones(64), 1e-10));
    EXPECT_LE(converged.errors.rowMax, 1e-10);
    EXPECT_LE(converged.errors.colMax, 1e-10);
    const auto early = lotAttention(c.in, givenPivots(c, 5, eps));
    EXPECT_LT(converged.errors.colMax, early.errors.colMax);
  }
}

// The reported errors: one entry per step, each equal to the errors of the plan stopped at that step, and
// the final entry equal to max/mean |sums − 1| of the returned dense plan.
TEST(Lot, ErrorHistoryMatchesPlanOfEachStep) {
  const LotCase c = makeCase(30, 6, 8, 5);
  const int T = 7;
  const auto r = lotAttention(c.in, givenPivots(c, T, 0.5));
  ASSERT_EQ(int(r.errorHistory.size()), T);
  for (int t = 1; t <= T; ++t) {
    SCOPED_TRACE(::testing::Message() << "t=" << t);
    const MatD A = lotAttention(c.in, givenPivots(c, t, 0.5)).plan.dense();
    const VecD rowDev = (rowSums(A).array() - 1).abs(), colDev = (colSums(A).array() - 1).abs();
    const MarginalErrors& e = r.errorHistory[size_t(t - 1)];
    EXPECT_TRUE(near(e.rowMax, rowDev.maxCoeff(), 1e-13));
    EXPECT_TRUE(near(e.rowMean, rowDev.mean(), 1e-13));
    EXPECT_TRUE(near(e.colMax, colDev.maxCoeff(), 1e-13));
    EXPECT_TRUE(near(e.colMean, colDev.mean(), 1e-13));
  }
  EXPECT_EQ(r.errors.colMax, r.errorHistory.back().colMax);
  EXPECT_EQ(r.errors.rowMax, r.errorHistory.back().rowMax);
}

// ‖1ᵀA − 1ᵀ‖₁ ≤ N(‖P1ᵀ1 − w‖₁ + ‖P2ᵀ1 − 1/N‖₁) + 1e-12 for odd T.
TEST(Lot, T4_ColumnErrorBound) {
  for (int T : {1, 3, 5, 7})
    for (double eps : {0.3, 1.0}) {
      SCOPED_TRACE(::testing::Message() << "T=" << T << " eps=" << eps);
      const LotCase c = makeCase(64, 8, 16, 20 + T);
      const auto r = lotAttention(c.in, givenPivots(c, T, eps));
      const VecD w = referenceMasses(c.theta, 0.5);
      const double lhs = (colSums(r.plan.dense()).array() - 1).abs().sum();
      const double rhs = 64 * ((colSums(extra(r, "lot_P1")) - w).cwiseAbs().sum() +
                               (colSums(extra(r, "lot_P2")).array() - 1.0 / 64).abs().sum());
      EXPECT_LE(lhs, rhs + 1e-12);
      EXPECT_GT(lhs, 0.0);
    }
}

// P1, P2, A ≥ 0 and finite at eps = 1e-3 and with logits near ±50 (log domain).
TEST(Lot, T5_NonnegativeAndFiniteAtExtremeLogits) {
  LotCase small = makeCase();
  LotCase large = makeCase();
  const double sScale = 50.0 / maxAbs(referenceScores(large.in.Q, large.Z));
  large.in.Q *= sScale;
  large.in.K *= 50.0 / maxAbs(referenceScores(large.Z, large.in.K));
  for (const auto& [c, eps] : {std::pair{small, 1e-3}, std::pair{large, 1.0}, std::pair{large, 1e-3}})
    for (int T : {1, 2, 5, 50}) {
      SCOPED_TRACE(::testing::Message() << "eps=" << eps << " T=" << T);
      const auto r = lotAttention(c.in, givenPivots(c, T, eps));
      for (const MatD& M : {r.plan.dense(), extra(r, "lot_P1"), extra(r, "lot_P2"), *r.output}) EXPECT_TRUE(M.allFinite());
      for (const MatD& M : {r.plan.dense(), extra(r, "lot_P1"), extra(r, "lot_P2")}) EXPECT_GE(M.minCoeff(), 0.0);
      // Rows stay exact up to 1e-15·max(1, max|S|/eps): the tolerance grows with the logit range.
      const double maxS = std::max(maxAbs(referenceScores(c.in.Q, c.Z)), maxAbs(referenceScores(c.Z, c.in.K)));
      if (T % 2 == 1) {
        EXPECT_LE(r.errors.rowMax, 1e-15 * std::max(1.0, maxS / eps)) << "rows stay exact";
      }
    }
}

// rank(A) ≤ r (σ_{r+1}/σ_1 ≤ 1e-12), generically = r at eps = 1; two identical pivots give rank ≤ r−1.
TEST(Lot, T6_RankAtMostR) {
  const LotCase c = makeCase();
  for (int T : {1, 2, 5, 201}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    const VecD s = singularValues(lotAttention(c.in, givenPivots(c, T, 1.0)).plan.dense());
    EXPECT_LE(s(8) / s(0), 1e-12);
    EXPECT_GE(s(7) / s(0), 1e-6);
  }
  LotCase twin = c;
  twin.Z.row(5) = twin.Z.row(2);
  const VecD s = singularValues(lotAttention(twin.in, givenPivots(twin, 5, 1.0)).plan.dense());
  EXPECT_LE(s(7) / s(0), 1e-12);
}

// Converged, σ_1 = 1 with the constant vector as its singular pair (A1 = 1, Aᵀ1 = 1).
TEST(Lot, T7_SpectralNormOneWhenConverged) {
  const LotCase c = makeCase();
  const MatD A = lotAttention(c.in, givenPivots(c, 201, 1.0)).plan.dense();
  Eigen::JacobiSVD<Eigen::MatrixXd> svd(A, Eigen::ComputeFullU | Eigen::ComputeFullV);
  EXPECT_TRUE(near(svd.singularValues()(0), 1.0, 1e-10));
  const VecD ones = VecD::Constant(64, 1 / std::sqrt(64.0));
  EXPECT_TRUE(near(std::abs(svd.matrixV().col(0).dot(ones)), 1.0, 1e-10));
  EXPECT_TRUE(near(std::abs(svd.matrixU().col(0).dot(ones)), 1.0, 1e-10));
}

// Q = K, converged: A symmetric, PSD, largest eigenvalue 1.
TEST(Lot, T8_SymmetricPsdWhenQueriesAreKeys) {
  LotCase c = makeCase();
  c.in.K = c.in.Q;
  const MatD A = lotAttention(c.in, givenPivots(c, 201, 1.0)).plan.dense();
  EXPECT_LE(maxAbs(A - A.transpose()), 1e-12);
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(Eigen::MatrixXd(0.5 * (A + A.transpose())));
  EXPECT_GE(eig.eigenvalues().minCoeff(), -1e-12);
  EXPECT_TRUE(near(eig.eigenvalues().maxCoeff(), 1.0, 1e-10));
}

// T = 1 is agent attention, A = softmax_rows(S1/eps)·softmax_rows(S2/eps), whatever w.
TEST(Lot, T9_OneStepIsAgentAttention) {
  const LotCase c = makeCase();
  for (double eps : {0.5, 1.0}) {
    const MatD expected = referenceRowSoftmax(referenceScores(c.in.Q, c.Z) / eps) *
                          referenceRowSoftmax(referenceScores(c.Z, c.in.K) / eps);
    for (const VecD& theta : {VecD(c.theta), VecD(VecD::Zero(8)), VecD(3.0 * c.theta)}) {
      EXPECT_TRUE(matricesNear(lotAttention(c.in, givenPivots(c.Z, theta, 1, eps)).plan.dense(), expected, 1e-14));
    }
  }
}

// One pivot gives mean pooling A = 11ᵀ/N (for T ≥ 2).
TEST(Lot, T10_OnePivotIsMeanPooling) {
  const LotCase c = makeCase(64, 1, 16, 4);
  for (int T : {2, 3, 5, 10}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    EXPECT_TRUE(matricesNear(lotAttention(c.in, givenPivots(c, T)).plan.dense(), MatD::Constant(64, 64, 1.0 / 64), 1e-14));
  }
}

// eps → ∞ flattens A to 11ᵀ/N. At the largest eps the schema accepts (1e6) the plan is uniform to first
// order in s/eps, s the largest score against the pivots: each factor's kernel lies in [e^{−2s/eps}, e^{2s/eps}]
// after normalisation, so |A·N − 1| ≤ e^{8s/eps} − 1 for the two glued problems.
TEST(Lot, T11_LargeEpsIsUniform) {
  const LotCase c = makeCase();
  const double eps = 1e6;
  const double sqrtD = std::sqrt(double(c.Z.cols()));
  const double s = std::max((c.in.Q * c.Z.transpose()).cwiseAbs().maxCoeff(),
                            (c.Z * c.in.K.transpose()).cwiseAbs().maxCoeff()) / sqrtD;
  for (int T : {1, 2, 5}) {
    const MatD A = lotAttention(c.in, givenPivots(c, T, eps)).plan.dense();
    EXPECT_LE(maxAbs(A.array() - 1.0 / 64), std::expm1(8 * s / eps) / 64) << "T=" << T;
    EXPECT_GT(maxAbs(A.array() - 1.0 / 64), 0.0) << "T=" << T << ": a finite eps is not exactly uniform";
  }
}

// The O(n r d) path equals the dense plan applied to V (1e-12 in float64, 1e-5·max|O| in float32).
TEST(Lot, T12_LazyOutputEqualsDensePlanTimesValues) {
  for (int T : {1, 2, 5})
    for (double eps : {0.3, 1.0}) {
      SCOPED_TRACE(::testing::Message() << "T=" << T << " eps=" << eps);
      const LotCase c = makeCase(64, 8, 16, 30 + T);
      const LotParams p = givenPivots(c, T, eps);
      const auto dense = lotAttention(c.in, p);
      const MatD denseOutput = dense.plan.dense() * *c.in.V;
      EXPECT_TRUE(matricesNear(lotOutput(c.in, p), denseOutput, 1e-12));
      EXPECT_TRUE(matricesNear(*dense.output, denseOutput, 1e-12));
      const MatF lazy32 = lotOutput(c.in.cast<float>(), p);
      const MatF dense32 = lotAttention(c.in.cast<float>(), p).plan.dense() * c.in.V->cast<float>();
      EXPECT_TRUE(matricesNear(lazy32, dense32, 1e-5 * maxAbs(denseOutput)));
    }
}

// V = 1cᵀ (constant rows): odd T maps constant rows to themselves; even T conserves Σ_i O_i = Σ_j V_j.
TEST(Lot, T13_Conservation) {
  const LotCase base = makeCase();
  LotCase c = base;
  const MatD cRow = gaussian(1, 5, 77);
  c.in.V = MatD(VecD::Ones(64) * cRow);
  for (int T : {1, 3, 5}) EXPECT_TRUE(matricesNear(lotOutput(c.in, givenPivots(c, T)), *c.in.V, 1e-12)) << T;
  for (int T : {2, 4, 6}) {
    const MatD O = lotOutput(base.in, givenPivots(base, T));
    EXPECT_TRUE(matricesNear(O.colwise().sum(), base.in.V->colwise().sum(), 1e-12)) << T;
  }
}

// Permuting tokens (Q, K, V rows together) permutes O and A; permuting pivots with their masses
// leaves A unchanged.
TEST(Lot, T14_PermutationEquivariance) {
  const LotCase c = makeCase();
  std::vector<int> perm(64);
  std::iota(perm.begin(), perm.end(), 0);
  std::reverse(perm.begin(), perm.begin() + 40);
  std::rotate(perm.begin(), perm.begin() + 11, perm.end());
  LotCase permuted = c;
  permuted.in.Q = test::permuteRows(c.in.Q, perm);
  permuted.in.K = test::permuteRows(c.in.K, perm);
  permuted.in.V = test::permuteRows(*c.in.V, perm);
  std::vector<int> pivotPerm = {3, 7, 0, 5, 1, 6, 2, 4};
  LotCase pivotsPermuted = c;
  pivotsPermuted.Z = test::permuteRows(c.Z, pivotPerm);
  pivotsPermuted.theta = test::permuteRows(MatD(c.theta), pivotPerm);
  for (int T : {1, 2, 5}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    const auto r = lotAttention(c.in, givenPivots(c, T));
    const auto rp = lotAttention(permuted.in, givenPivots(permuted, T));
    EXPECT_TRUE(matricesNear(*rp.output, test::permuteRows(*r.output, perm), 1e-12));
    const MatD permutedPlan = test::permuteRows(MatD(test::permuteRows(r.plan.dense(), perm).transpose()), perm).transpose();
    EXPECT_TRUE(matricesNear(rp.plan.dense(), permutedPlan, 1e-12));
    EXPECT_TRUE(matricesNear(lotAttention(pivotsPermuted.in, givenPivots(pivotsPermuted, T)).plan.dense(), r.plan.dense(), 1e-12));
  }
}

// Adds score constants through two extra dimensions, so that S1 gains rowShift_i + colShift_l and S2 gains
// pivotShift_l + keyShift_j (all divided by √d): Q' = α[Q, a, 1, 0], Z' = [Z, 1, g1, g2], K' = α[K, c, 0, 1]
// with α = √((d+3)/d) keeping the 1/√d' scale equal to 1/√d.
LotCase shiftScores(const LotCase& base, const VecD& rowShift, const VecD& colShift, const VecD& pivotShift,
                    const VecD& keyShift) {
  const Eigen::Index n = base.in.Q.rows(), r = base.Z.rows(), d = base.in.Q.cols();
  const double alpha = std::sqrt(double(d + 3) / double(d));
  LotCase s = base;
  s.in.Q = MatD(n, d + 3);
  s.in.Q << base.in.Q, rowShift, VecD::Ones(n), VecD::Zero(n);
  s.in.Q *= alpha;
  s.in.K = MatD(n, d + 3);
  s.in.K << base.in.K, keyShift, VecD::Zero(n), VecD::Ones(n);
  s.in.K *= alpha;
  s.Z = MatD(r, d + 3);
  s.Z << base.Z, VecD::Ones(r), colShift, pivotShift;
  return s;
}

TEST(Lot, ShiftConstructionAddsTheIntendedConstants) {
  const LotCase c = makeCase(9, 3, 4, 8);
  const VecD a = gaussian(9, 1, 1), g1 = gaussian(3, 1, 2), g2 = gaussian(3, 1, 3), k = gaussian(9, 1, 4);
  const LotCase s = shiftScores(c, a, g1, g2, k);
  const double sq = std::sqrt(4.0);
  const MatD S1 = referenceScores(c.in.Q, c.Z), S2 = referenceScores(c.Z, c.in.K);
  EXPECT_TRUE(matricesNear(referenceScores(s.in.Q, s.Z), (S1 + (a / sq) * VecD::Ones(3).transpose() +
                                                              VecD::Ones(9) * (g1 / sq).transpose()), 1e-13));
  EXPECT_TRUE(matricesNear(referenceScores(s.Z, s.in.K), (S2 + (g2 / sq) * VecD::Ones(9).transpose() +
                                                              VecD::Ones(3) * (k / sq).transpose()), 1e-13));
}

// A per-row constant on S1 or a per-pivot constant on the rows of S2 leaves P1 and P2 unchanged at
// every T (the first update is a row update).
TEST(Lot, T15_RowShiftsInvariantAtEveryBudget) {
  const LotCase c = makeCase();
  const LotCase s = shiftScores(c, gaussian(64, 1, 5, 2.0), VecD::Zero(8), gaussian(8, 1, 6, 2.0), VecD::Zero(64));
  for (int T : {1, 2, 3, 5, 20}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    const auto r = lotAttention(c.in, givenPivots(c, T));
    const auto rs = lotAttention(s.in, givenPivots(s, T));
    EXPECT_TRUE(matricesNear(extra(rs, "lot_P1"), extra(r, "lot_P1"), 1e-15));
    EXPECT_TRUE(matricesNear(extra(rs, "lot_P2"), extra(r, "lot_P2"), 1e-15));
  }
}

// Column shifts, i.e. the squared-distance similarity −‖x − y‖²/(2√d), agree only at convergence
// (T = 2001, eps = 0.7, 1e-12).
TEST(Lot, T15_SquaredDistanceSimilarityAgreesAtConvergence) {
  const LotCase c = makeCase();
  const VecD qNorm = -0.5 * c.in.Q.rowwise().squaredNorm(), kNorm = -0.5 * c.in.K.rowwise().squaredNorm();
  const VecD zNorm = -0.5 * c.Z.rowwise().squaredNorm();
  const LotCase s = shiftScores(c, qNorm, zNorm, zNorm, kNorm);
  const auto r = lotAttention(c.in, givenPivots(c, 2001, 0.7));
  const auto rs = lotAttention(s.in, givenPivots(s, 2001, 0.7));
  EXPECT_TRUE(matricesNear(rs.plan.dense(), r.plan.dense(), 1e-12));
  EXPECT_TRUE(matricesNear(extra(rs, "lot_P1"), extra(r, "lot_P1"), 1e-12));
  EXPECT_TRUE(matricesNear(extra(rs, "lot_P2"), extra(r, "lot_P2"), 1e-12));
  const auto early = lotAttention(c.in, givenPivots(c, 5, 0.7));
  const auto earlyShifted = lotAttention(s.in, givenPivots(s, 5, 0.7));
  EXPECT_GT(maxAbs(earlyShifted.plan.dense() - early.plan.dense()), 1e-6) << "column shifts are absorbed only in the limit";
}

// (S, eps) → (αS, αeps) (Q and K scaled by α) leaves the plans unchanged; so does (θ, τ) → (βθ, βτ).
TEST(Lot, T15_TemperatureScalingInvariance) {
  const LotCase c = makeCase();
  LotCase scaled = c;
  scaled.in.Q *= 2.5;
  scaled.in.K *= 2.5;
  for (int T : {1, 2, 5}) {
    const auto r = lotAttention(c.in, givenPivots(c, T, 0.8));
    const auto rs = lotAttention(scaled.in, givenPivots(scaled, T, 2.0));
    EXPECT_TRUE(matricesNear(extra(rs, "lot_P1"), extra(r, "lot_P1"), 1e-15));
    EXPECT_TRUE(matricesNear(extra(rs, "lot_P2"), extra(r, "lot_P2"), 1e-15));
    EXPECT_TRUE(matricesNear(rs.plan.dense(), r.plan.dense(), 1e-14));
    LotParams hot = givenPivots(c.Z, 3.0 * c.theta, T, 0.8);
    hot.massTemp = 1.5;
    EXPECT_TRUE(matricesNear(lotAttention(c.in, hot).plan.dense(), r.plan.dense(), 1e-14));
  }
}

// Padded tokens get zero attention and zero potentials; valid outputs equal LOT on the
// truncated sequence; the lazy path agrees.
TEST(Lot, T20_PaddingActsOnTheValidSubsequence) {
  const LotCase c = makeCase(40, 6, 8, 9);
  const std::vector<int> valid = {0, 1, 2, 4, 5, 6, 7, 9, 10, 11, 12, 13, 15, 16, 17, 20, 21, 22, 23, 24,
                                  25, 26, 27, 28, 30, 31, 32, 33, 36, 37};
  std::vector<bool> isValid(40, false);
  for (int i : valid) isValid[size_t(i)] = true;
  LotCase masked = c;
  masked.in.mask = test::makeMask(isValid);
  LotCase truncated = c;
  truncated.in.Q = test::selectRows(c.in.Q, valid);
  truncated.in.K = test::selectRows(c.in.K, valid);
  truncated.in.V = test::selectRows(*c.in.V, valid);
  for (int T : {1, 2, 5}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    const auto r = lotAttention(masked.in, givenPivots(masked, T));
    const auto rt = lotAttention(truncated.in, givenPivots(truncated, T));
    const MatD P1 = extra(r, "lot_P1"), P2 = extra(r, "lot_P2"), u1 = extra(r, "lot_u1"), v2 = extra(r, "lot_v2");
    ASSERT_EQ(P1.rows(), 40);
    ASSERT_EQ(P2.cols(), 40);
    for (int i = 0; i < 40; ++i) {
      if (isValid[size_t(i)]) continue;
      EXPECT_EQ(maxAbs(r.plan.dense().row(i)), 0.0) << "row " << i;
      EXPECT_EQ(maxAbs(r.plan.dense().col(i)), 0.0) << "column " << i;
      EXPECT_EQ(maxAbs(r.output->row(i)), 0.0) << "output " << i;
      EXPECT_EQ(maxAbs(P1.row(i)), 0.0);
      EXPECT_EQ(maxAbs(P2.col(i)), 0.0);
      EXPECT_EQ(u1(i), 0.0) << "masked potentials are 0 (docs/operators/lot.md#masks)";
      EXPECT_EQ(v2(i), 0.0);
    }
    EXPECT_TRUE(matricesNear(test::selectRows(*r.output, valid), *rt.output, 1e-12));
    EXPECT_TRUE(matricesNear(test::selectRows(MatD(test::selectRows(r.plan.dense(), valid).transpose()), valid).transpose(),
                             rt.plan.dense(), 1e-12));
    EXPECT_TRUE(matricesNear(test::selectRows(P1, valid), extra(rt, "lot_P1"), 1e-15));
    EXPECT_TRUE(matricesNear(test::selectRows(u1, valid), extra(rt, "lot_u1"), 1e-15));
    EXPECT_TRUE(matricesNear(lotOutput(masked.in, givenPivots(masked, T)), *r.output, 1e-12));
    // Errors against the declared targets: 1 on valid tokens, 0 on padded ones.
    EXPECT_EQ(r.errors.rowMax, rt.errors.rowMax);
    EXPECT_EQ(r.rowTarget.sum(), 30.0);
  }
}

// k-means pivots under padding come from the valid tokens only (the same as on the truncated input).
TEST(Lot, KMeansPivotsUnderPaddingUseValidTokensOnly) {
  LotCase c = makeCase(24, 4, 5, 12);
  std::vector<bool> isValid(24, true);
  std::vector<int> valid;
  for (int i = 0; i < 24; ++i) {
    isValid[size_t(i)] = (i % 5 != 3);
    if (isValid[size_t(i)]) valid.push_back(i);
  }
  LotParams p;
  p.r = 4;
  p.seed = 3;
  AttentionInput<double> masked = c.in, truncated;
  masked.mask = test::makeMask(isValid);
  truncated.Q = test::selectRows(c.in.Q, valid);
  truncated.K = test::selectRows(c.in.K, valid);
  truncated.V = test::selectRows(*c.in.V, valid);
  const auto r = lotAttention(masked, p), rt = lotAttention(truncated, p);
  EXPECT_TRUE(matricesNear(extra(r, "lot_pivots"), extra(rt, "lot_pivots"), 0.0));
  EXPECT_TRUE(matricesNear(test::selectRows(*r.output, valid), *rt.output, 0.0));
  EXPECT_TRUE(matricesNear(lotOutput(masked, p), *r.output, 1e-12));
}

// Rectangular inputs: a = 1/n_q, b = 1/n_k; rows of A target 1, columns n_q/n_k (mass-balanced).
TEST(Lot, RectangularMarginals) {
  LotCase c = makeCase(30, 5, 8, 14);
  c.in.K = gaussian(45, 8, 15);
  c.in.V = gaussian(45, 3, 16);
  const auto odd = lotAttention(c.in, givenPivots(c, 5));
  EXPECT_EQ(odd.plan.rows(), 30);
  EXPECT_EQ(odd.plan.cols(), 45);
  EXPECT_TRUE(matricesNear(rowSums(odd.plan.dense()), VecD::Ones(30), 1e-12));
  EXPECT_TRUE(matricesNear(odd.colTarget, VecD::Constant(45, 30.0 / 45), 1e-15));
  EXPECT_FALSE(odd.massMismatch);
  const auto even = lotAttention(c.in, givenPivots(c, 6));
  EXPECT_TRUE(matricesNear(colSums(even.plan.dense()), VecD::Constant(45, 30.0 / 45), 1e-12));
  EXPECT_LE(even.errors.colMax, 1e-12);
  EXPECT_TRUE(matricesNear(lotOutput(c.in, givenPivots(c, 6)), even.plan.dense() * *c.in.V, 1e-12));
}

// Float32 agrees with float64 to 2e-5 relative (docs/conventions.md#precision).
TEST(Lot, Float32AgreesWithFloat64) {
  const LotCase c = makeCase();
  for (int T : {1, 2, 5, 51})
    for (double eps : {0.3, 1.0}) {
      SCOPED_TRACE(::testing::Message() << "T=" << T << " eps=" << eps);
      const auto r64 = lotAttention(c.in, givenPivots(c, T, eps));
      const auto r32 = lotAttention(c.in.cast<float>(), givenPivots(c, T, eps));
      EXPECT_TRUE(matricesNear(r32.plan.dense(), r64.plan.dense(), 2e-5 * maxAbs(r64.plan.dense())));
      EXPECT_TRUE(matricesNear(*r32.output, *r64.output, 2e-5 * maxAbs(*r64.output)));
      EXPECT_LE(r32.errors.rowMax, T % 2 ? 2e-5 : 1.0);
    }
}

// The loop polls the feedback: a cancelled request stops with Canceled.
TEST(Lot, CancelStopsTheSolve) {
  const LotCase c = makeCase();
  Feedback feedback;
  feedback.cancel();
  EXPECT_THROW((void)lotAttention(c.in, givenPivots(c, 50), feedback), Canceled);
  EXPECT_THROW((void)lotOutput(c.in, givenPivots(c, 50), feedback), Canceled);
}

}  // namespace
}  // namespace tl
