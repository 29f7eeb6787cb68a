// ASAP online operator against docs/operators/asap.md#definition and the checks
// of docs/operators/asap.md#checks (teacher duals: docs/operators/asap.md#teacher-duals; masks:
// docs/operators/asap.md#masks).
#include "ops/asap/asap.h"

#include <gtest/gtest.h>

#include <numeric>

#include "io/npy.h"
#include "ops/registry.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;
using test::throwsWith;

AttentionInput<double> makeInput(int n, int d, uint64_t seed, bool withV = false) {
  AttentionInput<double> in;
  in.Q = gaussian(n, d, seed);
  in.K = gaussian(n, d, seed + 100);
  if (withV) in.V = gaussian(n, 3, seed + 200);
  return in;
}

PlanResult<double> teacher(const AttentionInput<double>& in, int T, double eps, MaskMode mode = MaskMode::Subsequence) {
  SinkhornParams p;
  p.T = T;
  p.eps = eps;
  p.maskMode = mode;
  return sinkhornAttention(in, p);
}

AsapParams fromDual(const VecD& dual, AsapVariant variant, double eps, Closing closing = Closing::Column,
                    MaskMode mode = MaskMode::Subsequence) {
  AsapParams p;
  p.dual = dual;
  p.variant = variant;
  p.eps = eps;
  p.closing = closing;
  p.maskMode = mode;
  return p;
}

double relMax(const MatD& a, const MatD& b) { return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff(); }

// From the exact final dual of a column-ending teacher, ASAP-0 gives the teacher back and
// two-sided ASAP gives the teacher run for T+2 steps (warm start: col, row, col).
TEST(Asap, ExactTeacherDualReproducesTheTeacher) {
  for (int n : {2, 3, 17, 64})
    for (double eps : {0.3, 1.0})
      for (int T : {2, 4, 10}) {
        SCOPED_TRACE(::testing::Message() << "n=" << n << " eps=" << eps << " T=" << T);
        const auto in = makeInput(n, 8, 7 * n + T);
        const auto t = teacher(in, T, eps);
        EXPECT_LE(relMax(asapAttention(in, fromDual(t.u, AsapVariant::Asap0, eps)).plan.dense(), t.plan.dense()), 1e-12);
        EXPECT_LE(relMax(asapAttention(in, fromDual(t.u, AsapVariant::TwoSided, eps)).plan.dense(), teacher(in, T + 2, eps).plan.dense()),
                  1e-12);
      }
}

// Row-ending two-sided ASAP from u^(T−2) equals the odd-T teacher (docs/operators/asap.md#teacher-duals).
TEST(Asap, RowEndingFromUTMinusTwoEqualsOddTeacher) {
  for (int T : {3, 5, 11}) {
    const auto in = makeInput(17, 8, T);
    const auto t = teacher(in, T, 0.7);
    const VecD uBefore = t.uHistory.row(T - 3).transpose();  // u after step T−2
    const auto a = asapAttention(in, fromDual(uBefore, AsapVariant::TwoSided, 0.7, Closing::Row));
    EXPECT_LE(relMax(a.plan.dense(), t.plan.dense()), 1e-12) << "T=" << T;
  }
}

// The key closure gives exact columns for any dual (even N(0, 100²)); the source closure
// exact rows. ASAP-0 is the column softmax of (S + u0 1ᵀ)/eps.
TEST(Asap, ClosuresAreExactForArbitraryDuals) {
  const auto in = makeInput(64, 8, 3);
  const VecD wild = gaussian(64, 1, 4, 100.0).col(0);
  const auto a0 = asapAttention(in, fromDual(wild, AsapVariant::Asap0, 1.0));
  EXPECT_LE((a0.plan.dense().colwise().sum().array() - 1).abs().maxCoeff(), 1e-12);
  const MatD logits = (test::referenceScores(in.Q, in.K).colwise() + wild);
  MatD colSoftmax(64, 64);
  for (int j = 0; j < 64; ++j) {
    const double m = logits.col(j).maxCoeff();
    const VecD e = (logits.col(j).array() - m).exp();
    colSoftmax.col(j) = e / e.sum();
  }
  EXPECT_TRUE(matricesNear(a0.plan.dense(), colSoftmax, 1e-12));
  const auto col = asapAttention(in, fromDual(wild, AsapVariant::TwoSided, 1.0, Closing::Column));
  EXPECT_LE((col.plan.dense().colwise().sum().array() - 1).abs().maxCoeff(), 1e-12);
  const auto row = asapAttention(in, fromDual(wild, AsapVariant::TwoSided, 1.0, Closing::Row));
  EXPECT_LE((row.plan.dense().rowwise().sum().array() - 1).abs().maxCoeff(), 1e-12);
  EXPECT_TRUE(near(row.errors.rowMax, 0, 1e-12));
}

// Adding a constant to the dual changes no plan.
TEST(Asap, ShiftInvariant) {
  const auto in = makeInput(17, 8, 5);
  const VecD f = gaussian(17, 1, 6).col(0);
  for (auto variant : {AsapVariant::Asap0, AsapVariant::TwoSided}) {
    const MatD base = asapAttention(in, fromDual(f, variant, 0.5)).plan.dense();
    for (double kappa : {-50.0, 3.7, 1e3}) {
      const VecD shifted = (f.array() + kappa).matrix();
      EXPECT_LE(relMax(asapAttention(in, fromDual(shifted, variant, 0.5)).plan.dense(), base), 1e-12) << "kappa=" << kappa;
    }
  }
}

// Perturbing one coordinate of a centred dual changes the plan.
TEST(Asap, PerturbedDualChangesThePlan) {
  const auto in = makeInput(10, 4, 8);
  VecD f = gaussian(10, 1, 9).col(0);
  f.array() -= f.mean();
  const MatD base = asapAttention(in, fromDual(f, AsapVariant::Asap0, 1.0)).plan.dense();
  f(3) += 0.1;
  EXPECT_GT((asapAttention(in, fromDual(f, AsapVariant::Asap0, 1.0)).plan.dense() - base).cwiseAbs().maxCoeff(), 1e-4);
}

// ‖P2 1 − μ‖₁ ≤ ‖P2 − P1‖₁ ≤ η = max_j |ν_j/ρ_j − 1|, ρ = P1ᵀ1 (transport scale).
TEST(Asap, RowErrorBound) {
  for (uint64_t seed : {1, 2, 3}) {
    const auto in = makeInput(32, 8, seed);
    const VecD f = gaussian(32, 1, seed + 50, 3.0).col(0);
    const double n = 32;
    const MatD P1 = asapAttention(in, fromDual(f, AsapVariant::TwoSided, 1.0, Closing::Row)).plan.dense() / n;
    const MatD P2 = asapAttention(in, fromDual(f, AsapVariant::TwoSided, 1.0, Closing::Column)).plan.dense() / n;
    const double rowErr = (P2.rowwise().sum().array() - 1 / n).abs().sum();
    const double planDiff = (P2 - P1).cwiseAbs().sum();
    const VecD rho = P1.colwise().sum().transpose();
    const double eta = ((1 / n) / rho.array() - 1).abs().maxCoeff();
    EXPECT_LE(rowErr, planDiff + 1e-12);
    EXPECT_LE(planDiff, eta + 1e-12);
  }
}

// Masked keys (keep-queries, docs/operators/asap.md#masks): ASAP-0 from the masked teacher's dual reproduces
// it, padded columns are exactly 0 and active columns sum to 1. Subsequence: the full-length teacher u (−inf
// on padded tokens) works too.
TEST(Asap, MaskedTeacherReproduced) {
  auto in = makeInput(20, 8, 12);
  in.mask = test::makeMask({true, true, false, true, true, true, true, false, true, true,
                            true, true, true, true, true, true, false, true, true, true});
  for (auto mode : {MaskMode::KeepQueries, MaskMode::Subsequence}) {
    const auto t = teacher(in, 6, 1.0, mode);
    const auto a = asapAttention(in, fromDual(t.u, AsapVariant::Asap0, 1.0, Closing::Column, mode));
    EXPECT_LE(relMax(a.plan.dense(), t.plan.dense()), 1e-12);
    for (int j : {2, 7, 16}) EXPECT_EQ(a.plan.dense().col(j).cwiseAbs().maxCoeff(), 0.0);
    for (int j : {0, 5, 19}) EXPECT_TRUE(near(a.plan.dense().col(j).sum(), 1.0, 1e-12));
  }
}

// Permutation equivariance of the plan and the output, through the slices+beta path.
TEST(Asap, SlicesAndBetaPathIsPermutationEquivariant) {
  auto in = makeInput(15, 6, 21, true);
  AsapParams p;
  p.slices = gaussian(8, 6, 22);
  p.beta = gaussian(8, 1, 23, 0.2).col(0);
  const auto r = asapAttention(in, p);
  // The predicted dual is Φβ − a (docs/operators/asap.md#closures).
  const VecD a = in.Q.rowwise().squaredNorm() / (2 * std::sqrt(6.0));
  EXPECT_TRUE(matricesNear(r.extras.at("asap_u"), MatD(r.extras.at("asap_features") * (*p.beta) - a), 1e-12));
  std::vector<int> perm(15);
  std::iota(perm.begin(), perm.end(), 0);
  std::rotate(perm.begin(), perm.begin() + 4, perm.end());
  AttentionInput<double> permuted;
  permuted.Q = test::permuteRows(in.Q, perm);
  permuted.K = test::permuteRows(in.K, perm);
  permuted.V = test::permuteRows(*in.V, perm);
  const auto rp = asapAttention(permuted, p);
  MatD expected(15, 15);
  for (int i = 0; i < 15; ++i)
    for (int j = 0; j < 15; ++j) expected(i, j) = r.plan(perm[size_t(i)], perm[size_t(j)]);
  EXPECT_TRUE(matricesNear(rp.plan.dense(), expected, 1e-12));
  EXPECT_TRUE(matricesNear(*rp.output, test::permuteRows(*r.output, perm), 1e-12));
}

// n = 1 gives [[1]].
TEST(Asap, SingleTokenPlanIsOne) {
  const auto in = makeInput(1, 4, 30);
  AsapParams p;
  p.slices = gaussian(3, 4, 31);
  p.beta = gaussian(3, 1, 32).col(0);
  EXPECT_TRUE(matricesNear(asapAttention(in, p).plan.dense(), MatD::Ones(1, 1), 0));
}

// Float32 path: ASAP-0 gives the column-ending teacher back at the float tolerance.
TEST(Asap, Float32ReproducesTheTeacher) {
  const auto in = makeInput(32, 8, 40);
  const auto t = teacher(in, 10, 1.0);
  const auto a = asapAttention(in.cast<float>(), fromDual(t.u, AsapVariant::Asap0, 1.0));
  EXPECT_LE(relMax(a.plan.dense().cast<double>(), t.plan.dense()), 1e-6);
}

class AsapFiles : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string put(const std::string& name, const MatD& m) {
    const std::string path = dir.file(name);
    writeNpy(path, m);
    return path;
  }
};

// Bad input names the parameter and the expected value.
TEST_F(AsapFiles, BadParametersAreNamed) {
  const auto& reg = OperatorRegistry::builtin();
  const std::string slices = put("slices.npy", gaussian(8, 6, 1)), beta = put("beta.npy", gaussian(5, 1, 2));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)reg.create(reg.parse("asap")); }, {"slices", "beta", "dual"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)reg.create(reg.parse("asap:slices=" + slices + ",beta=" + beta)); }, {"beta", "5", "L = 8"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)reg.create(reg.parse("asap:variant=asap0,closing=row,dual=" + beta)); }, {"closing=row"}));
  const std::string goodBeta = put("beta8.npy", gaussian(8, 1, 3));
  const auto op = reg.create(reg.parse("asap:slices=" + slices + ",beta=" + goodBeta));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)op->run(makeInput(10, 4, 1), noFeedback()); }, {"slices", "d = 4"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)reg.parse("asap:eps=0"); }, {"eps"}));
}

}  // namespace
}  // namespace tl
