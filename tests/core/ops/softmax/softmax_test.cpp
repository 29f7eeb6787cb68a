// Row softmax attention (the T = 1 Sinkhorn): docs/operators/softmax.md#definition, #masks and #checks.
#include "ops/softmax/softmax.h"

#include <gtest/gtest.h>

#include "common/parallel.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;
using test::referenceRowSoftmax;
using test::referenceScores;

AttentionInput<double> softmaxInput(int n, int d, uint64_t seed, bool withV = false) {
  AttentionInput<double> in;
  in.Q = gaussian(n, d, seed);
  in.K = gaussian(n, d, seed + 500);
  if (withV) in.V = gaussian(n, 3, seed + 900);
  return in;
}

SoftmaxParams params(MaskMode mode) {
  SoftmaxParams p;
  p.maskMode = mode;
  return p;
}

TEST(Softmax, EqualsManualRowSoftmaxAndRowsSumToOne) {
  for (int n : {1, 2, 3, 17, 64})
    for (int d : {1, 8, 32}) {
      SCOPED_TRACE(::testing::Message() << "n=" << n << " d=" << d);
      const auto in = softmaxInput(n, d, 3 * n + d);
      const auto r = softmaxAttention(in, SoftmaxParams{});
      EXPECT_TRUE(matricesNear(r.plan.dense(), referenceRowSoftmax(referenceScores(in.Q, in.K)), 1e-12));
      EXPECT_TRUE(matricesNear(r.plan.dense().rowwise().sum(), VecD::Ones(n), 1e-12));
      EXPECT_LE(r.errors.rowMax, 1e-12);
      const auto r32 = softmaxAttention(in.cast<float>(), SoftmaxParams{});
      EXPECT_TRUE(matricesNear(r32.plan.dense(), r.plan.dense(), 1e-6));
    }
}

// Large scores must not overflow (log-domain, never exponentiate unnormalised scores).
TEST(Softmax, StableForLargeScores) {
  auto in = softmaxInput(12, 8, 7);
  in.Q *= 40.0;  // scores of several hundred
  const auto r = softmaxAttention(in, SoftmaxParams{});
  EXPECT_TRUE(r.plan.dense().allFinite());
  EXPECT_TRUE(matricesNear(r.plan.dense(), referenceRowSoftmax(referenceScores(in.Q, in.K)), 1e-12));
  const auto r32 = softmaxAttention(in.cast<float>(), SoftmaxParams{});
  EXPECT_TRUE(r32.plan.dense().allFinite());
}

// Softmax is the T = 1 Sinkhorn at eps = 1.
TEST(Softmax, EqualsSinkhornBudgetOne) {
  const auto in = softmaxInput(17, 8, 11);
  SinkhornParams sp;
  sp.T = 1;
  sp.eps = 1.0;
  EXPECT_TRUE(matricesNear(softmaxAttention(in, SoftmaxParams{}).plan.dense(), sinkhornAttention(in, sp).plan.dense(), 1e-14));
}

// Duals in score coordinates reproduce the plan: A = n·exp(S + u ⊕ v) (eps = 1), and v = 0 on valid keys.
TEST(Softmax, DualsReproducePlan) {
  const int n = 17;
  const auto in = softmaxInput(n, 8, 13);
  const auto r = softmaxAttention(in, SoftmaxParams{});
  ASSERT_EQ(r.u.size(), n);
  ASSERT_EQ(r.v.size(), n);
  EXPECT_TRUE(matricesNear(r.v, VecD::Zero(n), 0.0));
  EXPECT_TRUE(matricesNear(test::planFromDuals(referenceScores(in.Q, in.K), r.u, r.v, 1.0, n), r.plan.dense(), 1e-12));
}

TEST(Softmax, OutputIsPlanTimesValues) {
  const auto in = softmaxInput(9, 4, 17, /*withV=*/true);
  const auto r = softmaxAttention(in, SoftmaxParams{});
  ASSERT_TRUE(r.output.has_value());
  EXPECT_TRUE(matricesNear(*r.output, r.plan.dense() * *in.V, 1e-12));
}

// keep-queries: padded keys get exactly zero weight, every row (padded queries too) is a softmax over the
// active keys; the duals (v = -inf on padded keys) still reproduce the plan.
TEST(Softmax, KeepQueriesMasksKeys) {
  const int n = 9;
  const std::vector<bool> valid = {true, false, true, true, true, false, true, true, false};
  auto in = softmaxInput(n, 4, 19);
  in.mask = test::makeMask(valid);
  const auto r = softmaxAttention(in, params(MaskMode::KeepQueries));
  const MatD S = referenceScores(in.Q, in.K);
  for (int j = 0; j < n; ++j)
    if (!valid[j]) {
      EXPECT_EQ(r.plan.dense().col(j).cwiseAbs().maxCoeff(), 0.0) << "padded key " << j;
    }
  EXPECT_TRUE(matricesNear(r.plan.dense(), referenceRowSoftmax(S, valid), 1e-12));
  EXPECT_TRUE(matricesNear(r.plan.dense().rowwise().sum(), VecD::Ones(n), 1e-12));
  EXPECT_TRUE(matricesNear(test::planFromDuals(S, r.u, r.v, 1.0, n), r.plan.dense(), 1e-12));
  EXPECT_LE(r.errors.rowMax, 1e-12);
  for (int j = 0; j < n; ++j) {
    if (!valid[j]) {
      EXPECT_EQ(r.colTarget(j), 0.0) << "padded key column target (docs/conventions.md#marginal-errors)";
    }
  }
  const auto r32 = softmaxAttention(in.cast<float>(), params(MaskMode::KeepQueries));
  EXPECT_TRUE(matricesNear(r32.plan.dense(), r.plan.dense(), 1e-6));
  for (int j = 0; j < n; ++j) {
    if (!valid[j]) {
      EXPECT_EQ(r32.plan.dense().col(j).cwiseAbs().maxCoeff(), 0.0f) << "float32 padded key " << j;
    }
  }
}

// subsequence (default): padded rows and columns are zero, valid rows are a softmax over valid keys.
TEST(Softmax, SubsequenceDropsPaddedTokens) {
  const int n = 9;
  const std::vector<bool> valid = {true, false, true, true, true, false, true, true, false};
  auto in = softmaxInput(n, 4, 23);
  in.mask = test::makeMask(valid);
  EXPECT_EQ(SoftmaxParams{}.maskMode, MaskMode::Subsequence);
  const auto r = softmaxAttention(in, SoftmaxParams{});
  MatD expected = referenceRowSoftmax(referenceScores(in.Q, in.K), valid);
  for (int i = 0; i < n; ++i)
    if (!valid[i]) expected.row(i).setZero();
  EXPECT_TRUE(matricesNear(r.plan.dense(), expected, 1e-12));
  for (int i = 0; i < n; ++i) {
    if (valid[i]) continue;
    EXPECT_EQ(r.plan.dense().row(i).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(r.plan.dense().col(i).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(r.u(i), -test::kInf);
    EXPECT_EQ(r.v(i), -test::kInf);
  }
}

// Softmax runs a fused pass of its own (ops/softmax/row_softmax.h); the T = 1 Sinkhorn at eps = 1 is its
// definition. Every field of the result matches it: plan, output, duals and their histories, targets, the
// mass-mismatch flag and the marginal errors (the column error is softmax's distance from double stochasticity),
// on shapes of several score blocks, square and rectangular, unmasked and under both mask modes, in float64
// (1e-12) and float32 (1e-5), and the numbers are the same bits on 1 and 2 threads.
TEST(Softmax, FusedPassReturnsWhatTheBudgetOneSinkhornReturns) {
  SinkhornParams asSinkhorn;
  asSinkhorn.T = 1;
  asSinkhorn.eps = 1.0;
  auto compare = [](const auto& fused, const auto& loop, double tol) {
    EXPECT_TRUE(matricesNear(fused.plan.dense(), loop.plan.dense(), tol));
    ASSERT_EQ(fused.output.has_value(), loop.output.has_value());
    if (fused.output) {
      EXPECT_TRUE(matricesNear(*fused.output, *loop.output, tol));
    }
    EXPECT_TRUE(matricesNear(fused.u, loop.u, 100 * tol));  // |u| ~ log n + |S|
    EXPECT_TRUE(test::matricesIdentical(fused.v, loop.v));
    EXPECT_TRUE(matricesNear(fused.uHistory, loop.uHistory, 100 * tol));
    EXPECT_TRUE(test::matricesIdentical(fused.vHistory, loop.vHistory));
    EXPECT_TRUE(test::matricesIdentical(fused.rowTarget, loop.rowTarget));
    EXPECT_TRUE(test::matricesIdentical(fused.colTarget, loop.colTarget));
    EXPECT_EQ(fused.massMismatch, loop.massMismatch);
    ASSERT_EQ(fused.errorHistory.size(), 1u);
    EXPECT_TRUE(near(fused.errors.colMax, loop.errors.colMax, 10 * tol));
    EXPECT_TRUE(near(fused.errors.colMean, loop.errors.colMean, 10 * tol));
    EXPECT_LE(fused.errors.rowMax, 10 * tol);
    EXPECT_GT(fused.errors.colMax, 0.1);  // softmax is far from doubly stochastic on random scores
    EXPECT_EQ(fused.errorHistory[0].colMax, fused.errors.colMax);
  };
  const std::vector<bool> valid = [] {
    std::vector<bool> v(300, true);
    for (int j = 0; j < 300; j += 7) v[size_t(j)] = false;
    return v;
  }();
  struct Case {
    int nq, nk;
    bool masked;
    MaskMode mode;
  };
  for (const Case& c : {Case{300, 300, false, MaskMode::Subsequence}, Case{257, 130, false, MaskMode::Subsequence},
                        Case{40, 700, false, MaskMode::Subsequence}, Case{300, 300, true, MaskMode::KeepQueries},
                        Case{300, 300, true, MaskMode::Subsequence}}) {
    SCOPED_TRACE(::testing::Message() << c.nq << " x " << c.nk << (c.masked ? " masked " : " ") << int(c.mode));
    AttentionInput<double> in;
    in.Q = 2.0 * gaussian(c.nq, 16, 41);
    in.K = gaussian(c.nk, 16, 42);
    in.V = gaussian(c.nk, 5, 43);
    if (c.masked) in.mask = test::makeMask(valid);
    asSinkhorn.maskMode = c.mode;
    compare(softmaxAttention(in, params(c.mode)), sinkhornAttention(in, asSinkhorn), 1e-12);
    const AttentionInput<float> in32 = in.cast<float>();
    compare(softmaxAttention(in32, params(c.mode)), sinkhornAttention(in32, asSinkhorn), 1e-5);
  }
  const int threadsBefore = parallelThreads();
  const auto in = softmaxInput(300, 16, 47, /*withV=*/true);
  setParallelThreads(1);
  const auto one = softmaxAttention(in, SoftmaxParams{});
  setParallelThreads(2);
  const auto two = softmaxAttention(in, SoftmaxParams{});
  setParallelThreads(threadsBefore);
  EXPECT_TRUE(test::matricesIdentical(one.plan.dense(), two.plan.dense()));
  EXPECT_TRUE(test::matricesIdentical(*one.output, *two.output));
  EXPECT_EQ(one.errors.colMax, two.errors.colMax);
  EXPECT_EQ(one.errors.colMean, two.errors.colMean);
}

TEST(Softmax, SingleTokenIsOne) {
  const auto in = softmaxInput(1, 5, 29);
  EXPECT_TRUE(near(softmaxAttention(in, SoftmaxParams{}).plan(0, 0), 1.0, 1e-15));
}

}  // namespace
}  // namespace tl
