// Banded Sinkhorn forward against docs/operators/banded.md#definition and the checks of
// docs/operators/banded.md#checks.
#include "ops/banded/banded.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/parallel.h"
#include "ops/registry.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;
using test::throwsWith;

AttentionInput<double> makeInput(int nq, int nk, int d, uint64_t seed) {
  AttentionInput<double> in;
  in.Q = gaussian(nq, d, seed);
  in.K = gaussian(nk, d, seed + 1);
  in.V = gaussian(nk, 4, seed + 2);
  return in;
}

BandedParams params(int W, int base, int tail, double eps = 1.0) {
  BandedParams p;
  p.W = W;
  p.baseSteps = base;
  p.tailSteps = tail;
  p.eps = eps;
  return p;
}

// Band storage agrees with the dense scores on the support: its LSEs with a masked dense LSE (a -inf
// potential masks its token), its plan rows with the masked dense plan and A·V with that plan times V.
void expectBandMatchesMaskedDense(int nq, int nk, int W) {
  const auto in = makeInput(nq, nk, 4, 1);
  const BandScores<double> band(in.Q, in.K, 0.7, W);
  const MatD S = test::referenceScores(in.Q, in.K) / 0.7;
  VecD u = gaussian(nq, 1, 5).col(0), v = gaussian(nk, 1, 6).col(0);
  u(1) = -test::kInf;
  v(2) = -test::kInf;
  MatD plan = MatD::Zero(nq, nk);
  for (int i = 0; i < nq; ++i)
    for (int j = 0; j < nk; ++j)
      if (std::abs(i - j) <= W) plan(i, j) = 2.0 * std::exp(S(i, j) + u(i) + v(j));
  const VecD rows = band.rowLogSumExp(v), cols = band.colLogSumExp(u);
  for (int i = 0; i < nq; ++i) {
    double expected = 0;
    bool any = false;
    for (int j = 0; j < nk; ++j)
      if (std::abs(i - j) <= W) {
        expected += std::exp(S(i, j) + v(j));
        any = true;
      }
    if (any) EXPECT_TRUE(near(rows(i), std::log(expected), 1e-12)) << "row " << i;
    else EXPECT_EQ(rows(i), -test::kInf) << "row " << i << " has no support";
  }
  for (int j = 0; j < nk; ++j) {
    double expected = 0;
    bool any = false;
    for (int i = 0; i < nq; ++i)
      if (std::abs(i - j) <= W) {
        expected += std::exp(S(i, j) + u(i));
        any = true;
      }
    if (any) EXPECT_TRUE(near(cols(j), std::log(expected), 1e-12)) << "col " << j;
    else EXPECT_EQ(cols(j), -test::kInf) << "col " << j << " has no support";
  }
  // Plan entries reach ~1e4 on the large case, where the vectorised and the scalar exp differ by a few ulps:
  // relative to the largest entry.
  const double planTolerance = 1e-12 * std::max(1.0, plan.cwiseAbs().maxCoeff());
  EXPECT_TRUE(matricesNear(band.planRows(u, v, 2.0, 0, nq), plan, planTolerance));
  EXPECT_TRUE(matricesNear(band.planRows(u, v, 2.0, 3, 5), plan.middleRows(3, 5), planTolerance));
  const MatD output = plan * *in.V;  // entries up to ~1e5 here: the tolerance is relative
  EXPECT_TRUE(matricesNear(band.apply(u, v, 2.0, *in.V), output, 1e-14 * output.cwiseAbs().maxCoeff()));
}

TEST(BandScores, MatchesMaskedDenseScores) {
  expectBandMatchesMaskedDense(13, 9, 3);
  expectBandMatchesMaskedDense(13, 9, 30);  // wider than both sides (as with a dustbin): slots with no support
  const BandScores<double> band(gaussian(13, 4, 1), gaussian(9, 4, 2), 0.7, 3);
  EXPECT_FALSE(band.activeRows()(12));  // i = 12 ≥ n_k + W = 12: no key within the band
  EXPECT_TRUE(band.activeRows()(11));
}

// Large enough that the passes split rows and columns across threads (each thread's columns gather rows from
// both sides of its range): the same agreement on 1 and 2 threads, on rectangles with inactive rows and with
// inactive columns; and the same bits on both, since each token's terms are added in a fixed order.
TEST(BandScores, ThreadedPassesMatchMaskedDenseScores) {
  const int threadsBefore = parallelThreads();
  const BandScores<float> band(gaussian(1300, 8, 3).cast<float>(), gaussian(1100, 8, 4).cast<float>(), 0.5f, 16);
  const Vec<float> u = gaussian(1300, 1, 5).col(0).cast<float>(), v = gaussian(1100, 1, 6).col(0).cast<float>();
  std::vector<Vec<float>> rows, cols;
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    setParallelThreads(threads);
    expectBandMatchesMaskedDense(1300, 1100, 16);
    expectBandMatchesMaskedDense(1100, 1300, 16);
    rows.push_back(band.rowLogSumExp(v));
    cols.push_back(band.colLogSumExp(u));
  }
  setParallelThreads(threadsBefore);
  EXPECT_EQ(rows[0], rows[1]);
  EXPECT_EQ(cols[0], cols[1]);
}

// Score tiles of several key panels per row tile (W = 40: a tile of rows reaches 86 keys) and an odd feature count.
TEST(BandScores, WideBandsMatchMaskedDenseScores) { expectBandMatchesMaskedDense(300, 280, 40); }

// rowClosurePass on the band: the row LSE over colShift and the column LSE over the closure u = logMu − rowLse it
// sets, from one pass (W = 16; chunks of 256 rows, each summing its own columns) and from two passes where a
// chunk's exponentials would not fit its buffer (W = 300 in float64). On rectangles with inactive rows, an
// inactive row (log marginal −inf) and a masked column (shift −inf: LSE −inf, no mass): the row LSE has the bits of
// rowLogSumExp, the column LSE matches colLogSumExp over u to rounding, and both have the same bits on 1 and 2
// threads.
template <class T>
void expectRowClosurePassMatchesTwoPasses(int nq, int nk, int W, double tolerance) {
  const BandScores<T> band(gaussian(nq, 8, 7).cast<T>(), gaussian(nk, 8, 8).cast<T>(), T(0.5), W);
  Vec<T> colShift = gaussian(nk, 1, 9).col(0).cast<T>(), logMu = Vec<T>::Constant(nq, -std::log(T(nq)));
  colShift(5) = -std::numeric_limits<T>::infinity();
  logMu(3) = -std::numeric_limits<T>::infinity();
  for (int i = 0; i < nq; ++i)
    if (!band.activeRows()(i)) logMu(i) = -std::numeric_limits<T>::infinity();
  const int threadsBefore = parallelThreads();
  std::vector<RowClosurePass<T>> passes;
  for (int threads : {1, 2}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s), W = " + std::to_string(W));
    setParallelThreads(threads);
    passes.push_back(band.rowClosurePass(colShift, logMu));
    const Vec<T> rowLse = band.rowLogSumExp(colShift);
    EXPECT_TRUE(test::matricesIdentical(passes.back().rowLse, rowLse));
    Vec<T> colLse = band.colLogSumExp(closure(logMu, rowLse));
    colLse(5) = -std::numeric_limits<T>::infinity();
    EXPECT_TRUE(matricesNear(passes.back().colLse, colLse, tolerance));
  }
  setParallelThreads(threadsBefore);
  EXPECT_TRUE(test::matricesIdentical(passes[0].colLse, passes[1].colLse));
}

TEST(BandScores, RowClosurePassGivesTheRowAndNextColumnLogSumExps) {
  expectRowClosurePassMatchesTwoPasses<double>(1300, 1100, 16, 1e-12);
  expectRowClosurePassMatchesTwoPasses<double>(1100, 1300, 16, 1e-12);
  expectRowClosurePassMatchesTwoPasses<float>(1300, 1100, 16, 1e-4);
  expectRowClosurePassMatchesTwoPasses<double>(700, 650, 300, 1e-12);
}

// A column whose band entries lie 200 (float32) or 800 (float64) below every row's maximum sums to 0 from the kept
// exponentials; the pass then gives the exact column LSE (colLogSumExp over u, the same bits), finite there.
TEST(BandScores, RowClosurePassFallsBackWhereTheColumnSumsUnderflow) {
  auto check = [](auto zero, double below) {
    using T = decltype(zero);
    const Eigen::Index n = 600, W = 10, column = 300;
    Mat<T> scores = gaussian(n, 2 * W + 1, 10).cast<T>();
    for (Eigen::Index i = column - W; i <= column + W; ++i) scores(i, column - i + W) -= T(below);
    const BandScores<T> band(scores, n, W);
    const Vec<T> colShift = Vec<T>::Zero(n), logMu = Vec<T>::Constant(n, -std::log(T(n)));
    const RowClosurePass<T> pass = band.rowClosurePass(colShift, logMu);
    const Vec<T> exact = band.colLogSumExp(Vec<T>(logMu - pass.rowLse));
    EXPECT_TRUE(std::isfinite(pass.colLse(column))) << pass.colLse(column);
    EXPECT_TRUE(test::matricesIdentical(pass.colLse, exact));
  };
  check(0.0f, 200.0);
  check(0.0, 800.0);
}

// With a band covering everything, banded Sinkhorn is Sinkhorn with budget T = 2·(base + tail).
TEST(Banded, FullBandEqualsSinkhornWithEquivalentBudget) {
  for (int base : {0, 1, 4})
    for (int tail : {0, 1, 2}) {
      if (base + tail == 0) continue;
      const auto in = makeInput(20, 20, 8, 10 + base + tail);
      SinkhornParams sp;
      sp.T = 2 * (base + tail);
      sp.eps = 0.6;
      const auto s = sinkhornAttention(in, sp);
      const auto b = bandedAttention(in, params(19, base, tail, 0.6));
      EXPECT_TRUE(matricesNear(b.plan.dense(), s.plan.dense(), 1e-12)) << "base=" << base << " tail=" << tail;
      EXPECT_TRUE(matricesNear(*b.output, *s.output, 1e-12));
      EXPECT_EQ(b.errorHistory.size(), size_t(sp.T));
    }
}

// Zero mass off the support, exactly; the lazy O(n·W) path equals the dense output.
TEST(Banded, ZeroOffTheBandAndLazyEqualsDense) {
  for (int W : {0, 1, 5}) {
    const auto in = makeInput(24, 24, 6, 30 + W);
    const auto p = params(W, 6, 2);
    const auto b = bandedAttention(in, p);
    for (int i = 0; i < 24; ++i)
      for (int j = 0; j < 24; ++j)
        if (std::abs(i - j) > W) {
          ASSERT_EQ(b.plan(i, j), 0.0) << i << "," << j;
        }
    EXPECT_TRUE(matricesNear(bandedOutput(in, p), *b.output, 1e-12));
    EXPECT_TRUE(matricesNear(*b.output, MatD(b.plan.dense() * (*in.V)), 1e-12));
    const auto op = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse("banded:W=" + std::to_string(W)));
    EXPECT_TRUE(op->structuredPlan());
  }
}

// Columns of P^(R,R) sum to 1 after the tail (f64 1e-12, f32 2e-5); a converged square problem
// has rows within 1e-8 of 1 (square support at T = 200 full steps; rectangles converge slower,
// docs/operators/banded.md#rectangles).
TEST(Banded, ColumnsExactAndRowsConverge) {
  const auto in = makeInput(32, 32, 8, 40);
  const auto b = bandedAttention(in, params(6, 3, 2));
  EXPECT_LE((b.plan.dense().colwise().sum().array() - 1).abs().maxCoeff(), 1e-12);
  const auto f = bandedAttention(in.cast<float>(), params(6, 3, 2));
  EXPECT_LE((f.plan.dense().colwise().sum().array() - 1).abs().maxCoeff(), 2e-5);
  const auto converged = bandedAttention(in, params(31, 200, 2));
  EXPECT_LE((converged.plan.dense().rowwise().sum().array() - 1).abs().maxCoeff(), 1e-8);
}

// Rectangular supports: rows converge uniformly to n_k/|I_q| (labelled a mass mismatch); rows with no
// support entry (i ≥ n_k + W) are inactive with zero mass and zero target.
TEST(Banded, RectangularRowsConvergeToTheMassRatio) {
  const auto in = makeInput(9, 6, 4, 50);
  const auto b = bandedAttention(in, params(2, 3000, 2));
  const VecD rows = b.plan.dense().rowwise().sum();
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(near(rows(i), 6.0 / 8.0, 1e-8)) << "row " << i;
  EXPECT_EQ(rows(8), 0.0);
  EXPECT_EQ(b.rowTarget(8), 0.0);
  EXPECT_TRUE(b.massMismatch);
}

// Adding a constant to the base pair's gauge changes nothing, and a per-row constant added to
// the scores (here through an appended feature) leaves the output unchanged.
TEST(Banded, RowShiftOfScoresLeavesOutputUnchanged) {
  auto in = makeInput(16, 16, 5, 60);
  const auto base = bandedAttention(in, params(4, 5, 2));
  AttentionInput<double> shifted;
  shifted.Q = MatD(16, 6);
  shifted.K = MatD(16, 6);
  // With an appended feature (q: a_i·√6, k: 1) and the old features scaled by (6/5)^{1/4} on both sides,
  // S' = QKᵀ·√(6/5)/√6 + a_i = S + a_i exactly.
  const VecD a = gaussian(16, 1, 61, 3.0).col(0);
  const double rescale = std::sqrt(6.0 / 5.0);
  shifted.Q << in.Q * std::sqrt(rescale), a * std::sqrt(6.0);
  shifted.K << in.K * std::sqrt(rescale), VecD::Ones(16);
  shifted.V = in.V;
  const auto b = bandedAttention(shifted, params(4, 5, 2));
  EXPECT_TRUE(matricesNear(*b.output, *base.output, 1e-12));
}

// Padded tokens are dropped (subsequence): their rows and columns are exactly 0 and their values do not matter.
TEST(Banded, PaddedTokensCarryNothing) {
  auto in = makeInput(12, 12, 4, 70);
  in.mask = test::makeMask({true, true, true, true, true, true, true, true, true, false, false, false});
  const auto b = bandedAttention(in, params(3, 5, 2));
  for (int t : {9, 10, 11}) {
    EXPECT_EQ(b.plan.dense().row(t).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(b.plan.dense().col(t).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ(b.output->row(t).cwiseAbs().maxCoeff(), 0.0);
  }
  auto noisy = in;
  noisy.Q.bottomRows(3) = gaussian(3, 4, 99, 50.0);
  noisy.K.bottomRows(3) = gaussian(3, 4, 98, 50.0);
  EXPECT_TRUE(test::matricesIdentical(bandedAttention(noisy, params(3, 5, 2)).plan.dense(), b.plan.dense()));
}

// Single active dustbin: the augmented system is balanced, and the real block plus the dustbin share gives
// unit rows and columns.
TEST(Banded, DustbinBalancesTheAugmentedSystem) {
  const auto in = makeInput(15, 15, 4, 80);
  auto p = params(2, 300, 2);
  p.dustbin = true;
  const auto b = bandedAttention(in, p);
  ASSERT_EQ(b.plan.rows(), 15);
  const VecD toDustbin = b.extras.at("banded_dustbin_query_mass").col(0);
  const VecD fromDustbin = b.extras.at("banded_dustbin_key_mass").col(0);
  EXPECT_TRUE(matricesNear(VecD(b.plan.dense().rowwise().sum() + toDustbin), VecD::Ones(15), 1e-8));
  EXPECT_TRUE(matricesNear(VecD(b.plan.dense().colwise().sum().transpose() + fromDustbin), VecD::Ones(15), 1e-12));
  EXPECT_GT(toDustbin.minCoeff(), 0.0);
}

TEST(Banded, BadParametersAreNamed) {
  const auto& reg = OperatorRegistry::builtin();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)reg.parse("banded:W=-1"); }, {"W"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)reg.create(reg.parse("banded:base_steps=0,tail_steps=0")); },
                                          {"base_steps", "tail_steps"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)reg.parse("banded:mask_mode=keep-queries"); }, {"mask_mode"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)reg.parse("banded:eps=0"); }, {"eps"}));
}

}  // namespace
}  // namespace tl
