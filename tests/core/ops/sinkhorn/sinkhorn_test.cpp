// Finite-budget log-domain Sinkhorn attention against docs/operators/sinkhorn.md#definition and the checks
// of docs/operators/sinkhorn.md#checks. Every reference value is computed here from the documented formulas
// (test_util.h), never from core/.
#include "ops/sinkhorn/sinkhorn.h"

#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "ops/log_domain.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;
using test::planFromDuals;
using test::referenceMatrixSinkhorn;
using test::referenceRowSoftmax;
using test::referenceScores;

AttentionInput<double> makeInput(int n, int d, uint64_t seed, double qScale = 1.0, bool withV = false) {
  AttentionInput<double> in;
  in.Q = gaussian(n, d, seed, qScale);
  in.K = gaussian(n, d, seed + 1000);
  if (withV) in.V = gaussian(n, 5, seed + 2000);
  return in;
}

SinkhornParams params(int T, double eps, MaskMode mode = MaskMode::Subsequence) {
  SinkhornParams p;
  p.T = T;
  p.eps = eps;
  p.maskMode = mode;
  return p;
}

// Row and column sums of an attention-scale plan.
VecD rowSums(const MatD& A) { return A.rowwise().sum(); }
VecD colSums(const MatD& A) { return A.colwise().sum().transpose(); }

// Test grid: n ∈ {1,2,3,17,64}, d ∈ {1,8,32}, eps ∈ {0.3,1}.
const int kNs[] = {1, 2, 3, 17, 64};
const int kDs[] = {1, 8, 32};
const double kEpss[] = {0.3, 1.0};

// T = 1 is the row softmax of S/eps.
TEST(Sinkhorn, BudgetOneIsRowSoftmax) {
  for (int n : kNs)
    for (int d : kDs)
      for (double eps : kEpss) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " d=" << d << " eps=" << eps);
        const auto in = makeInput(n, d, 11 * n + d);
        const MatD expected = referenceRowSoftmax(referenceScores(in.Q, in.K) / eps);
        const auto r64 = sinkhornAttention(in, params(1, eps));
        EXPECT_TRUE(matricesNear(r64.plan.dense(), expected, 1e-12));
        const auto r32 = sinkhornAttention(in.cast<float>(), params(1, eps));
        EXPECT_TRUE(matricesNear(r32.plan.dense(), expected, 1e-6));
      }
}

// The log-domain teacher equals plain matrix-normalisation Sinkhorn, odd and even T.
TEST(Sinkhorn, EqualsMatrixNormalisationSinkhorn) {
  for (int n : {2, 3, 17, 64})
    for (int d : kDs)
      for (double eps : kEpss)
        for (int T : {2, 3, 4, 7, 10, 11}) {
          SCOPED_TRACE(::testing::Message() << "n=" << n << " d=" << d << " eps=" << eps << " T=" << T);
          const auto in = makeInput(n, d, 7 * n + d + T);
          const MatD expected = referenceMatrixSinkhorn(referenceScores(in.Q, in.K), eps, T);
          EXPECT_TRUE(matricesNear(sinkhornAttention(in, params(T, eps)).plan.dense(), expected, 1e-12));
        }
}

// The same in float32 (tol 1e-5), including the large-score case ||q|| ~ 10.
TEST(Sinkhorn, Float32MatchesMatrixSinkhornIncludingLargeScores) {
  for (int d : {8, 32})
    for (double eps : kEpss)
      for (int T : {1, 2, 5, 10}) {
        SCOPED_TRACE(::testing::Message() << "d=" << d << " eps=" << eps << " T=" << T);
        // Rows of Q ~ N(0, (10/√d)² I) have norm about 10.
        const auto in = makeInput(24, d, 300 + d + T, 10.0 / std::sqrt(double(d)));
        const MatD expected = referenceMatrixSinkhorn(referenceScores(in.Q, in.K), eps, T);
        const auto r32 = sinkhornAttention(in.cast<float>(), params(T, eps));
        EXPECT_TRUE(r32.plan.dense().allFinite());
        EXPECT_TRUE(matricesNear(r32.plan.dense(), expected, 1e-5));
      }
}

// The float32 path agrees with the float64 path.
TEST(Sinkhorn, Float32AgreesWithFloat64) {
  for (int T : {1, 2, 10, 51})
    for (double eps : kEpss) {
      SCOPED_TRACE(::testing::Message() << "eps=" << eps << " T=" << T);
      const auto in = makeInput(32, 16, 40 + T);
      const auto r64 = sinkhornAttention(in, params(T, eps));
      const auto r32 = sinkhornAttention(in.cast<float>(), params(T, eps));
      EXPECT_TRUE(matricesNear(r32.plan.dense(), r64.plan.dense(), 1e-5));
    }
}

// After every single normalisation the side just closed is exact. The plan after step t is
// rebuilt here from the recorded duals, A^(t) = n·exp((S + u^(t) ⊕ v^(t))/eps) (docs/conventions.md#duals).
TEST(Sinkhorn, ClosingSideExactAfterEveryStep) {
  for (double eps : kEpss) {
    const int n = 17, T = 9;
    SCOPED_TRACE(::testing::Message() << "eps=" << eps);
    const auto in = makeInput(n, 8, 5);
    const MatD S = referenceScores(in.Q, in.K);
    const auto r = sinkhornAttention(in, params(T, eps));
    ASSERT_EQ(r.uHistory.rows(), T);
    ASSERT_EQ(r.vHistory.rows(), T);
    ASSERT_EQ(r.uHistory.cols(), n);
    ASSERT_EQ(r.vHistory.cols(), n);
    for (int t = 1; t <= T; ++t) {
      SCOPED_TRACE(::testing::Message() << "step t=" << t);
      const MatD A = planFromDuals(S, r.uHistory.row(t - 1).transpose(), r.vHistory.row(t - 1).transpose(), eps, n);
      if (t % 2 == 1) {
        EXPECT_TRUE(matricesNear(rowSums(A), VecD::Ones(n), 1e-12)) << "rows after odd step";
      } else {
        EXPECT_TRUE(matricesNear(colSums(A), VecD::Ones(n), 1e-12)) << "columns after even step";
      }
      // The history also matches matrix-normalisation Sinkhorn stopped at step t.
      EXPECT_TRUE(matricesNear(A, referenceMatrixSinkhorn(S, eps, t), 1e-12));
    }
    // The last history row is the final dual pair.
    EXPECT_TRUE(matricesNear(r.uHistory.row(T - 1).transpose(), r.u, 0.0));
    EXPECT_TRUE(matricesNear(r.vHistory.row(T - 1).transpose(), r.v, 0.0));
  }
}

// The reported final duals reproduce the returned plan (plan_result.h contract, docs/conventions.md#duals).
TEST(Sinkhorn, FinalDualsReproducePlan) {
  for (double eps : kEpss)
    for (int T : {1, 2, 7, 10}) {
      SCOPED_TRACE(::testing::Message() << "eps=" << eps << " T=" << T);
      const int n = 17;
      const auto in = makeInput(n, 8, 77 + T);
      const auto r = sinkhornAttention(in, params(T, eps));
      ASSERT_EQ(r.u.size(), n);
      ASSERT_EQ(r.v.size(), n);
      EXPECT_TRUE(matricesNear(planFromDuals(referenceScores(in.Q, in.K), r.u, r.v, eps, n), r.plan.dense(), 1e-12));
    }
}

// Marginal error shrinks with T and reaches 1e-10 by T=200 (n=32, float64).
// Step to step, the L1 error of the open side cannot grow: after a row step P' = diag(mu/r)P,
// sum_j |c'_j - nu_j| = sum_j |sum_i P_ij (mu_i/r_i - 1)| <= sum_i |mu_i - r_i| (and symmetrically), so
// the sequence "column mean error after odd t, row mean error after even t" is non-increasing.
TEST(Sinkhorn, MarginalErrorDecreasesAndConverges) {
  const int n = 32;
  const auto in = makeInput(n, 8, 3, 2.0);
  const auto r = sinkhornAttention(in, params(200, 1.0));
  ASSERT_EQ(int(r.errorHistory.size()), 200);
  double previous = std::numeric_limits<double>::infinity();
  for (int t = 1; t <= 200; ++t) {
    const auto& e = r.errorHistory[t - 1];
    const double open = (t % 2 == 1) ? e.colMean : e.rowMean;
    EXPECT_LE(open, previous * (1 + 1e-9) + 1e-15) << "open-side error grew at step " << t;
    previous = open;
  }
  EXPECT_GT(r.errorHistory[1].rowMax, 1e-4) << "the test input should not be trivially balanced";
  // Final plan balanced on both sides, checked from the plan itself.
  EXPECT_TRUE(matricesNear(rowSums(r.plan.dense()), VecD::Ones(n), 1e-10));
  EXPECT_TRUE(matricesNear(colSums(r.plan.dense()), VecD::Ones(n), 1e-10));
  EXPECT_LE(r.errors.rowMax, 1e-10);
  EXPECT_LE(r.errors.colMax, 1e-10);

  // The open-side (row) error of even-T plans falls as T grows.
  double last = std::numeric_limits<double>::infinity();
  for (int T : {2, 6, 20}) {
    const auto rT = sinkhornAttention(in, params(T, 1.0));
    const double rowErr = (rowSums(rT.plan.dense()) - VecD::Ones(n)).cwiseAbs().maxCoeff();
    EXPECT_LT(rowErr, last) << "T=" << T;
    last = rowErr;
  }
}

// errorHistory has T entries, each the marginal errors of the plan after that step (targets 1); the
// last one and `errors` describe the returned plan.
void expectErrorHistoryMatchesPlansOfEachStep(int n, int T, double eps, uint64_t seed) {
  const auto in = makeInput(n, 8, seed);
  const MatD S = referenceScores(in.Q, in.K);
  const auto r = sinkhornAttention(in, params(T, eps));
  ASSERT_EQ(int(r.errorHistory.size()), T);
  auto expectErrors = [n](const MarginalErrors& e, const MatD& A) {
    const VecD rowDev = (rowSums(A) - VecD::Ones(n)).cwiseAbs();
    const VecD colDev = (colSums(A) - VecD::Ones(n)).cwiseAbs();
    EXPECT_TRUE(near(e.rowMax, rowDev.maxCoeff(), 1e-12));
    EXPECT_TRUE(near(e.rowMean, rowDev.mean(), 1e-12));
    EXPECT_TRUE(near(e.colMax, colDev.maxCoeff(), 1e-12));
    EXPECT_TRUE(near(e.colMean, colDev.mean(), 1e-12));
  };
  for (int t = 1; t <= T; ++t) {
    SCOPED_TRACE(::testing::Message() << "t=" << t);
    expectErrors(r.errorHistory[t - 1], referenceMatrixSinkhorn(S, eps, t));
  }
  expectErrors(r.errors, r.plan.dense());
  // Targets are nominally 1 (they may be computed as n·(1/n), hence 1e-15).
  EXPECT_TRUE(matricesNear(r.rowTarget, VecD::Ones(n), 1e-15));
  EXPECT_TRUE(matricesNear(r.colTarget, VecD::Ones(n), 1e-15));
  EXPECT_FALSE(r.massMismatch);
}

TEST(Sinkhorn, ErrorHistoryMatchesPlansOfEachStep) { expectErrorHistoryMatchesPlansOfEachStep(17, 8, 0.3, 19); }

// The same on 600 tokens: a half-step's errors are accumulated over blocks of 256 tokens (the last one short), the
// open side's from the potential before the closure and the closed side's from the one after it.
TEST(Sinkhorn, ErrorHistoryOverSeveralTokenBlocksMatchesPlansOfEachStep) {
  expectErrorHistoryMatchesPlansOfEachStep(600, 3, 0.5, 23);
}

// Shift invariance. Scores change by a 1ᵀ + 1 bᵀ through two appended features, exactly:
//   q'_i = [λ q_i, √d' a_i, √d'],  k'_j = [λ k_j, 1, b_j],  d' = d + 2,  λ = (d'/d)^{1/4}
//   ⇒ q'_i·k'_j / √d' = q_i·k_j / √d + a_i + b_j.
// A row shift is absorbed exactly by the first (row) closure, u ← u − a, so the plan is unchanged at
// EVERY budget. A column shift only cancels at convergence (the finite teacher depends on it,
// docs/operators/sinkhorn.md#resolutions).
AttentionInput<double> withShifts(const AttentionInput<double>& in, const VecD& a, const VecD& b) {
  const int n = in.nQueries(), d = in.headDim(), d2 = d + 2;
  const double lambda = std::pow(double(d2) / d, 0.25), root = std::sqrt(double(d2));
  AttentionInput<double> out;
  out.Q.resize(n, d2);
  out.K.resize(in.nKeys(), d2);
  out.Q.leftCols(d) = lambda * in.Q;
  out.Q.col(d) = root * a;
  out.Q.col(d + 1).setConstant(root);
  out.K.leftCols(d) = lambda * in.K;
  out.K.col(d).setOnes();
  out.K.col(d + 1) = b;
  return out;
}

TEST(Sinkhorn, ShiftConstructionChangesScoresByRowAndColumnConstants) {
  const auto in = makeInput(9, 4, 123);
  const VecD a = gaussian(9, 1, 5, 3.0).col(0), b = gaussian(9, 1, 6, 3.0).col(0);
  const MatD expected = referenceScores(in.Q, in.K) + a * VecD::Ones(9).transpose() + VecD::Ones(9) * b.transpose();
  const auto shifted = withShifts(in, a, b);
  EXPECT_TRUE(matricesNear(referenceScores(shifted.Q, shifted.K), expected, 1e-12));
  EXPECT_TRUE(matricesNear(scores(shifted.Q, shifted.K), expected, 1e-12));
}

TEST(Sinkhorn, RowShiftInvariantAtEveryBudget) {
  const int n = 12;
  const auto in = makeInput(n, 4, 21);
  const VecD a = gaussian(n, 1, 8, 3.0).col(0);
  const auto shifted = withShifts(in, a, VecD::Zero(n));
  for (double eps : kEpss)
    for (int T : {1, 2, 5, 10}) {
      SCOPED_TRACE(::testing::Message() << "eps=" << eps << " T=" << T);
      EXPECT_TRUE(matricesNear(sinkhornAttention(shifted, params(T, eps)).plan.dense(),
                               sinkhornAttention(in, params(T, eps)).plan.dense(), 1e-12));
    }
}

TEST(Sinkhorn, RowAndColumnShiftInvariantAtConvergence) {
  const int n = 12;
  const auto in = makeInput(n, 4, 22);
  const VecD a = gaussian(n, 1, 9, 3.0).col(0), b = gaussian(n, 1, 10, 3.0).col(0);
  const auto shifted = withShifts(in, a, b);
  // Sanity: a column shift does change the finite T=1 plan (softmax is not column-shift invariant).
  EXPECT_GT((sinkhornAttention(shifted, params(1, 1.0)).plan.dense() - sinkhornAttention(in, params(1, 1.0)).plan.dense())
                .cwiseAbs()
                .maxCoeff(),
            1e-3);
  for (double eps : kEpss) {
    SCOPED_TRACE(::testing::Message() << "eps=" << eps);
    const auto base = sinkhornAttention(in, params(2000, eps));
    ASSERT_LE(base.errors.rowMax, 1e-12) << "not converged; the invariance needs convergence";
    EXPECT_TRUE(matricesNear(sinkhornAttention(shifted, params(2000, eps)).plan.dense(), base.plan.dense(), 1e-9));
  }
}

// eps only scales the scores: the plan for (S, eps) equals the plan for (S/eps, 1); build S/eps by
// scaling Q by 1/eps. Duals in score coordinates scale with eps: u(S, eps) = eps·u(S/eps, 1).
TEST(Sinkhorn, TemperatureScalesScores) {
  const int n = 15;
  const auto in = makeInput(n, 8, 31);
  for (double eps : {0.3, 2.5})
    for (int T : {1, 4, 9}) {
      SCOPED_TRACE(::testing::Message() << "eps=" << eps << " T=" << T);
      AttentionInput<double> scaled = in;
      scaled.Q = in.Q / eps;
      const auto r = sinkhornAttention(in, params(T, eps));
      const auto r1 = sinkhornAttention(scaled, params(T, 1.0));
      EXPECT_TRUE(matricesNear(r.plan.dense(), r1.plan.dense(), 1e-12));
      EXPECT_TRUE(matricesNear(r.u, eps * r1.u, 1e-11));
      EXPECT_TRUE(matricesNear(r.v, eps * r1.v, 1e-11));
    }
}

// n = 1 gives [[1]] in both precisions.
TEST(Sinkhorn, SingleTokenIsOne) {
  for (int T : {1, 2, 5})
    for (double eps : kEpss) {
      SCOPED_TRACE(::testing::Message() << "eps=" << eps << " T=" << T);
      const auto in = makeInput(1, 3, 99, 4.0);
      const auto r = sinkhornAttention(in, params(T, eps));
      ASSERT_EQ(r.plan.rows(), 1);
      ASSERT_EQ(r.plan.cols(), 1);
      EXPECT_TRUE(near(r.plan(0, 0), 1.0, 1e-15));
      const auto r32 = sinkhornAttention(in.cast<float>(), params(T, eps));
      EXPECT_TRUE(near(r32.plan(0, 0), 1.0, 1e-7));
    }
}

// For the teacher: permuting queries and keys jointly permutes the plan, A' = Π A Πᵀ,
// and the output rows, O' = Π O when V is permuted with the keys.
TEST(Sinkhorn, PermutationEquivariant) {
  const int n = 13;
  const auto in = makeInput(n, 8, 41, 1.0, /*withV=*/true);
  std::vector<int> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  std::mt19937_64 rng(5);
  std::shuffle(perm.begin(), perm.end(), rng);
  AttentionInput<double> permuted;
  permuted.Q = test::permuteRows(in.Q, perm);
  permuted.K = test::permuteRows(in.K, perm);
  permuted.V = test::permuteRows(*in.V, perm);
  for (int T : {1, 4, 7}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    const auto r = sinkhornAttention(in, params(T, 0.5));
    const auto rp = sinkhornAttention(permuted, params(T, 0.5));
    MatD expected(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) expected(i, j) = r.plan(perm[i], perm[j]);
    EXPECT_TRUE(matricesNear(rp.plan.dense(), expected, 1e-12));
    ASSERT_TRUE(r.output.has_value());
    ASSERT_TRUE(rp.output.has_value());
    EXPECT_TRUE(matricesNear(*rp.output, test::permuteRows(*r.output, perm), 1e-12));
  }
}

// O = A V when V is given; no output without V.
TEST(Sinkhorn, OutputIsPlanTimesValues) {
  const auto in = makeInput(10, 4, 51, 1.0, /*withV=*/true);
  const auto r = sinkhornAttention(in, params(6, 1.0));
  ASSERT_TRUE(r.output.has_value());
  EXPECT_TRUE(matricesNear(*r.output, r.plan.dense() * *in.V, 1e-12));
  const auto noV = makeInput(10, 4, 51);
  EXPECT_FALSE(sinkhornAttention(noV, params(6, 1.0)).output.has_value());
}

// Cross-attention shapes n_q != n_k: mu = 1/n_q, nu = 1/n_k and A = n_q·P, so closed columns sum to
// n_q/n_k. Rescaling columns by a constant does not change the next row normalisation, so the plan is
// matrix-normalisation Sinkhorn with columns normalised to n_q/n_k.
TEST(Sinkhorn, RectangularMarginalsAndTargets) {
  const int nq = 6, nk = 9;
  AttentionInput<double> in;
  in.Q = gaussian(nq, 4, 61);
  in.K = gaussian(nk, 4, 62);
  const MatD S = referenceScores(in.Q, in.K);
  const double c = double(nq) / nk;
  for (int T : {1, 2, 3, 4}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    const auto r = sinkhornAttention(in, params(T, 1.0));
    ASSERT_EQ(r.plan.rows(), nq);
    ASSERT_EQ(r.plan.cols(), nk);
    const MatD expected = (T % 2 == 0 ? c : 1.0) * referenceMatrixSinkhorn(S, 1.0, T);
    EXPECT_TRUE(matricesNear(r.plan.dense(), expected, 1e-12));
    EXPECT_TRUE(matricesNear(r.rowTarget, VecD::Ones(nq), 1e-15));
    EXPECT_TRUE(matricesNear(r.colTarget, VecD::Constant(nk, c), 1e-15));
    EXPECT_FALSE(r.massMismatch) << "n_q·1 = n_k·(n_q/n_k)";
    if (T % 2 == 0) {
      EXPECT_LE(r.errors.colMax, 1e-12);
    }
  }
}

// keep-queries (Sinkformer convention, docs/conventions.md#masks): padded keys get nu_j = 0, v_j = -inf, zero
// columns; all query rows kept with mu = 1/n. Even T: active columns sum to 1 and total transport mass is
// |J|/n (even T only). Odd T: rows sum to 1.
TEST(Sinkhorn, KeepQueriesMasksKeysOnly) {
  const int n = 10;
  const std::vector<bool> valid = {true, true, false, true, true, false, true, true, true, false};
  const int nValid = 7;
  auto in = makeInput(n, 6, 71);
  in.mask = test::makeMask(valid);
  const MatD S = referenceScores(in.Q, in.K);
  for (double eps : kEpss)
    for (int T : {1, 2, 3, 4, 10}) {
      SCOPED_TRACE(::testing::Message() << "eps=" << eps << " T=" << T);
      const auto r = sinkhornAttention(in, params(T, eps, MaskMode::KeepQueries));
      ASSERT_EQ(r.plan.rows(), n);
      ASSERT_EQ(r.plan.cols(), n);
      EXPECT_TRUE(r.plan.dense().allFinite());
      for (int j = 0; j < n; ++j) {
        if (valid[j]) continue;
        EXPECT_EQ(r.plan.dense().col(j).cwiseAbs().maxCoeff(), 0.0) << "padded key column " << j;
        EXPECT_EQ(r.v(j), -test::kInf) << "padded key dual " << j;
      }
      EXPECT_TRUE(matricesNear(r.plan.dense(), referenceMatrixSinkhorn(S, eps, T, valid), 1e-12));
      EXPECT_TRUE(matricesNear(planFromDuals(S, r.u, r.v, eps, n), r.plan.dense(), 1e-12));
      if (T % 2 == 0) {
        const VecD cols = colSums(r.plan.dense());
        for (int j = 0; j < n; ++j)
          if (valid[j]) {
            EXPECT_TRUE(near(cols(j), 1.0, 1e-12)) << "active column " << j;
          }
        EXPECT_TRUE(near(r.plan.dense().sum() / n, double(nValid) / n, 1e-12)) << "total mass |J|/n";
      } else {
        EXPECT_TRUE(matricesNear(rowSums(r.plan.dense()), VecD::Ones(n), 1e-12));
      }
      // Declared targets: every row 1 (mu = 1/n), active columns 1, padded columns 0; the totals differ.
      VecD colTarget(n);
      for (int j = 0; j < n; ++j) colTarget(j) = valid[j] ? 1.0 : 0.0;
      EXPECT_TRUE(matricesNear(r.colTarget, colTarget, 1e-15));
      EXPECT_TRUE(matricesNear(r.rowTarget, VecD::Ones(n), 1e-15));
      for (int j = 0; j < n; ++j) {
        if (!valid[j]) {
          EXPECT_EQ(r.colTarget(j), 0.0) << "padded column target is exactly 0";
        }
      }
      EXPECT_TRUE(r.massMismatch);
      // float32: same plan to 1e-5, and padded columns still exactly 0 (mask inside the exponent,
      // docs/conventions.md#log-domain).
      const auto r32 = sinkhornAttention(in.cast<float>(), params(T, eps, MaskMode::KeepQueries));
      EXPECT_TRUE(matricesNear(r32.plan.dense(), r.plan.dense(), 1e-5));
      for (int j = 0; j < n; ++j) {
        if (!valid[j]) {
          EXPECT_EQ(r32.plan.dense().col(j).cwiseAbs().maxCoeff(), 0.0f) << "float32 padded key column " << j;
        }
      }
    }
}

// subsequence (default): a padded sequence behaves exactly like its valid sub-sequence; padded rows and
// columns are exactly 0 and padded duals -inf.
TEST(Sinkhorn, SubsequenceEqualsValidSubBlock) {
  const int n = 10;
  const std::vector<bool> valid = {true, false, true, true, false, true, true, true, false, true};
  std::vector<int> idx;
  for (int i = 0; i < n; ++i)
    if (valid[i]) idx.push_back(i);
  auto in = makeInput(n, 6, 81, 1.0, /*withV=*/true);
  in.mask = test::makeMask(valid);
  AttentionInput<double> sub;
  sub.Q = test::selectRows(in.Q, idx);
  sub.K = test::selectRows(in.K, idx);
  sub.V = test::selectRows(*in.V, idx);
  EXPECT_EQ(SinkhornParams{}.maskMode, MaskMode::Subsequence) << "subsequence is the default";
  for (int T : {1, 4, 7}) {
    SCOPED_TRACE(::testing::Message() << "T=" << T);
    const auto r = sinkhornAttention(in, params(T, 0.5));
    const auto rs = sinkhornAttention(sub, params(T, 0.5));
    ASSERT_EQ(r.plan.rows(), n);
    ASSERT_EQ(r.plan.cols(), n);
    for (int i = 0; i < n; ++i) {
      if (valid[i]) continue;
      EXPECT_EQ(r.plan.dense().row(i).cwiseAbs().maxCoeff(), 0.0) << "padded row " << i;
      EXPECT_EQ(r.plan.dense().col(i).cwiseAbs().maxCoeff(), 0.0) << "padded column " << i;
      EXPECT_EQ(r.u(i), -test::kInf);
      EXPECT_EQ(r.v(i), -test::kInf);
      ASSERT_TRUE(r.output.has_value());
      EXPECT_EQ(r.output->row(i).cwiseAbs().maxCoeff(), 0.0) << "padded output row " << i;
    }
    for (int a = 0; a < int(idx.size()); ++a) {
      for (int b = 0; b < int(idx.size()); ++b)
        EXPECT_TRUE(near(r.plan(idx[a], idx[b]), rs.plan(a, b), 1e-12)) << a << "," << b;
      EXPECT_TRUE(near(r.u(idx[a]), rs.u(a), 1e-12));
      EXPECT_TRUE(near(r.v(idx[a]), rs.v(a), 1e-12));
      EXPECT_TRUE(matricesNear(r.output->row(idx[a]), rs.output->row(a), 1e-12));
      EXPECT_TRUE(near(r.rowTarget(idx[a]), 1.0, 1e-15));
      EXPECT_TRUE(near(r.colTarget(idx[a]), 1.0, 1e-15));
    }
    for (int i = 0; i < n; ++i) {
      if (valid[i]) continue;
      EXPECT_EQ(r.rowTarget(i), 0.0);
      EXPECT_EQ(r.colTarget(i), 0.0);
    }
    // Independently: the valid block is matrix-normalisation Sinkhorn on the valid tokens' scores
    // (marginals 1/n_valid).
    const MatD block = referenceMatrixSinkhorn(referenceScores(sub.Q, sub.K), 0.5, T);
    for (int a = 0; a < int(idx.size()); ++a)
      for (int b = 0; b < int(idx.size()); ++b) EXPECT_TRUE(near(r.plan(idx[a], idx[b]), block(a, b), 1e-12));
    EXPECT_TRUE(near(r.errors.rowMax, rs.errors.rowMax, 1e-12));
    EXPECT_TRUE(near(r.errors.colMax, rs.errors.colMax, 1e-12));
    EXPECT_EQ(r.errorHistory.size(), size_t(T));
  }
}

// A mask with every token valid changes nothing, in either mode.
TEST(Sinkhorn, AllValidMaskIsNoMask) {
  auto in = makeInput(8, 4, 91);
  const auto plain = sinkhornAttention(in, params(5, 1.0));
  in.mask = Mask::Constant(8, true);
  for (auto mode : {MaskMode::Subsequence, MaskMode::KeepQueries}) {
    EXPECT_TRUE(matricesNear(sinkhornAttention(in, params(5, 1.0, mode)).plan.dense(), plain.plan.dense(), 1e-15));
  }
}

TEST(Sinkhorn, CanceledFeedbackStopsTheRun) {
  const auto in = makeInput(16, 4, 101);
  Feedback feedback;
  feedback.cancel();
  EXPECT_THROW((void)sinkhornAttention(in, params(50, 1.0), feedback), Canceled);
}

TEST(Sinkhorn, RejectsInvalidInput) {
  auto in = makeInput(6, 3, 111);
  in.Q(2, 1) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([&] { (void)sinkhornAttention(in, params(4, 1.0)); }, {"Q"}));
  auto bad = makeInput(6, 3, 112);
  bad.K = gaussian(6, 4, 3);  // d mismatch
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([&] { (void)sinkhornAttention(bad, params(4, 1.0)); }));
}

// Every key padded: there is nothing to attend to. Either a clear InvalidArgument, or an all-zero plan
// without NaN (docs/architecture.md#errors: never silent garbage).
TEST(Sinkhorn, AllPaddedMaskIsAnErrorOrZero) {
  auto in = makeInput(5, 3, 121);
  in.mask = Mask::Constant(5, false);
  for (auto mode : {MaskMode::Subsequence, MaskMode::KeepQueries}) {
    SCOPED_TRACE(maskModeName(mode));
    try {
      const auto r = sinkhornAttention(in, params(4, 1.0, mode));
      EXPECT_FALSE(r.plan.dense().hasNaN());
      EXPECT_EQ(r.plan.dense().cwiseAbs().sum(), 0.0);
    } catch (const InvalidArgument& e) {
      EXPECT_NE(std::string(e.what()), "");
    }
  }
}

}  // namespace
}  // namespace tl
