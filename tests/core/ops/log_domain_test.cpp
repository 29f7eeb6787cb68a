// Log-sum-exp along rows and columns with potentials, and the score convention S = QKᵀ/√d.
#include "ops/log_domain.h"
#include "ops/score_blocks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "common/parallel.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::kInf;
using test::matricesNear;

VecD naiveRowLse(const MatD& X, const VecD& shift) {
  VecD out(X.rows());
  for (int i = 0; i < X.rows(); ++i) {
    double s = 0;
    for (int j = 0; j < X.cols(); ++j) s += std::exp(X(i, j) + shift(j));
    out(i) = std::log(s);
  }
  return out;
}

VecD naiveColLse(const MatD& X, const VecD& shift) {
  VecD out(X.cols());
  for (int j = 0; j < X.cols(); ++j) {
    double s = 0;
    for (int i = 0; i < X.rows(); ++i) s += std::exp(X(i, j) + shift(i));
    out(j) = std::log(s);
  }
  return out;
}

// exactExp's vectorised exp (common/packet_exp.h) against the long-double exp: error in units in the last place
// of the correctly rounded result. Measured 0.94 ulp with FMA and 1.19 without (a portable -march=x86-64 build
// computes pmadd as a product and a sum), so 1.25 ulp holds on every build and still fails an approximation
// one degree short (2.7 ulp in float) or Eigen 3.4's double exp with its division (1.7 ulp) ...
template <class T>
double worstUlpError(const Eigen::Array<T, Eigen::Dynamic, 1>& x) {
  const Eigen::Array<T, Eigen::Dynamic, 1> y = exactExp(x);
  double worst = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i) {
    const long double exact = std::exp(static_cast<long double>(x(i)));
    const T rounded = T(exact);
    const long double ulp = std::nextafter(rounded, std::numeric_limits<T>::infinity()) - rounded;
    worst = std::max(worst, double(std::fabs(y(i) - exact) / ulp));
  }
  return worst;
}

// ... and in the subnormal range, where the result has fewer bits, within one subnormal step.
template <class T>
double worstSubnormalError(const Eigen::Array<T, Eigen::Dynamic, 1>& x) {
  const Eigen::Array<T, Eigen::Dynamic, 1> y = exactExp(x);
  double worst = 0;
  for (Eigen::Index i = 0; i < x.size(); ++i)
    worst = std::max(worst, double(std::fabs(y(i) - std::exp(static_cast<long double>(x(i))))));
  return worst / std::numeric_limits<T>::denorm_min();
}

template <class T>
void expectAccurateExp() {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  const T lowestNormal = std::log(std::numeric_limits<T>::min()), highest = std::log(std::numeric_limits<T>::max());
  // A dense sweep of every result from the smallest normal to the largest finite value, and the range of a
  // log-sum-exp's x − max, where nearly all the operators' exponentials fall.
  EXPECT_LE(worstUlpError<T>(Array::LinSpaced(1 << 20, lowestNormal, highest)), 1.25);
  EXPECT_LE(worstUlpError<T>(Array::LinSpaced(1 << 20, T(-30), T(0))), 1.25);
  const T lowestSubnormal = std::log(std::numeric_limits<T>::denorm_min());
  EXPECT_LE(worstSubnormalError<T>(Array::LinSpaced(1 << 16, lowestSubnormal, lowestNormal)), 1.0);
}

TEST(ExactExp, WithinAnUlpOfExpInFloat) { expectAccurateExp<float>(); }
TEST(ExactExp, WithinAnUlpOfExpInDouble) { expectAccurateExp<double>(); }

// Each special value fills a whole array, so that the vectorised path (and the scalar one for the remainder)
// computes it.
template <class T>
void expectExactSpecialValues() {
  using Array = Eigen::Array<T, Eigen::Dynamic, 1>;
  constexpr T inf = std::numeric_limits<T>::infinity();
  auto expOf = [](T x) { return Array(exactExp(Array::Constant(67, x))); };
  EXPECT_TRUE((expOf(-inf) == T(0)).all());  // masked entries are exactly 0 ...
  EXPECT_FALSE(std::signbit(expOf(-inf)(0)));  // ... and +0
  EXPECT_TRUE((expOf(T(0)) == T(1)).all());
  EXPECT_TRUE((expOf(-T(0)) == T(1)).all());
  EXPECT_TRUE((expOf(inf) == inf).all());
  EXPECT_TRUE(expOf(std::numeric_limits<T>::quiet_NaN()).isNaN().all());
  EXPECT_TRUE((expOf(T(-1e30)) == T(0)).all());
  EXPECT_TRUE((expOf(T(1e30)) == inf).all());
  const T highest = std::log(std::numeric_limits<T>::max());
  EXPECT_TRUE((expOf(std::nextafter(highest, T(0))) < inf).all());
  EXPECT_TRUE((expOf(highest * T(1.001)) == inf).all());
}

TEST(ExactExp, SpecialValuesInFloat) { expectExactSpecialValues<float>(); }
TEST(ExactExp, SpecialValuesInDouble) { expectExactSpecialValues<double>(); }

TEST(LogDomain, MatchesNaiveOnModerateValues) {
  const MatD X = gaussian(7, 11, 1, 3.0);
  const VecD colShift = gaussian(11, 1, 2).col(0);
  const VecD rowShift = gaussian(7, 1, 3).col(0);
  EXPECT_TRUE(matricesNear(rowLogSumExp(X, colShift), naiveRowLse(X, colShift), 1e-13));
  EXPECT_TRUE(matricesNear(colLogSumExp(X, rowShift), naiveColLse(X, rowShift), 1e-13));
  // float instantiation
  const Vec<float> r32 = rowLogSumExp<float>(X.cast<float>(), colShift.cast<float>());
  EXPECT_TRUE(matricesNear(r32, naiveRowLse(X, colShift), 1e-5));
  const Vec<float> c32 = colLogSumExp<float>(X.cast<float>(), rowShift.cast<float>());
  EXPECT_TRUE(matricesNear(c32, naiveColLse(X, rowShift), 1e-5));
}

// Values around 1e3 overflow a naive exp; the stable form gives max + log(sum exp(x - max)).
TEST(LogDomain, StableOnHugeValues) {
  MatD X(2, 3);
  X << 1000.0, 999.0, 998.0,   //
      -1000.0, -1001.0, 1000.0;
  const VecD zero3 = VecD::Zero(3), zero2 = VecD::Zero(2);
  const VecD row = rowLogSumExp(X, zero3);
  EXPECT_TRUE(test::near(row(0), 1000.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-12));
  EXPECT_TRUE(test::near(row(1), 1000.0, 1e-12));
  const VecD col = colLogSumExp(X, zero2);
  EXPECT_TRUE(test::near(col(0), 1000.0, 1e-12));
  EXPECT_TRUE(test::near(col(1), 999.0, 1e-12));
  EXPECT_TRUE(test::near(col(2), 1000.0 + std::log1p(std::exp(-2.0)), 1e-12));  // {998, 1000}
  // Huge negative values: no underflow to -inf, log-sum-exp is still exact.
  const MatD N = -X;
  EXPECT_TRUE(test::near(rowLogSumExp(N, zero3)(0), -998.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-12));
  // The same in float.
  const Vec<float> r32 = rowLogSumExp<float>(X.cast<float>(), zero3.cast<float>());
  EXPECT_TRUE(r32.allFinite());
  EXPECT_NEAR(r32(0), 1000.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0)), 1e-3);
}

// Masked (-inf) entries, in X or in the shift, contribute nothing; an all -inf row gives -inf, not NaN
// (docs/conventions.md#log-domain).
TEST(LogDomain, MinusInfinityIsSafe) {
  MatD X(3, 3);
  X << 0.5, -kInf, 1.5,  //
      -kInf, -kInf, -kInf,  //
      2.0, 1.0, -kInf;
  const VecD zero = VecD::Zero(3);
  const VecD row = rowLogSumExp(X, zero);
  EXPECT_TRUE(test::near(row(0), std::log(std::exp(0.5) + std::exp(1.5)), 1e-14));
  EXPECT_EQ(row(1), -kInf);
  EXPECT_TRUE(test::near(row(2), std::log(std::exp(2.0) + std::exp(1.0)), 1e-14));
  const VecD col = colLogSumExp(X, zero);
  EXPECT_FALSE(std::isnan(col(1)));
  EXPECT_TRUE(test::near(col(1), 1.0, 1e-14));

  // Shift of -inf masks a whole column / row.
  const MatD Y = gaussian(3, 4, 9);
  VecD colShift = VecD::Zero(4);
  colShift(1) = -kInf;
  VecD expected(3);
  for (int i = 0; i < 3; ++i) expected(i) = std::log(std::exp(Y(i, 0)) + std::exp(Y(i, 2)) + std::exp(Y(i, 3)));
  EXPECT_TRUE(matricesNear(rowLogSumExp(Y, colShift), expected, 1e-14));
  const VecD allMasked = VecD::Constant(4, -kInf);
  const VecD out = rowLogSumExp(Y, allMasked);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out(i), -kInf) << "row " << i;
  const VecD outCol = colLogSumExp(Y, VecD(VecD::Constant(3, -kInf)));
  for (int j = 0; j < 4; ++j) EXPECT_EQ(outCol(j), -kInf) << "col " << j;
  const Vec<float> out32 = rowLogSumExp<float>(Y.cast<float>(), allMasked.cast<float>());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(out32(i), -std::numeric_limits<float>::infinity());
}

// The column pass works in cache tiles (32 rows × 512 columns) with a running maximum, and both passes split
// across threads above a size: on a matrix larger than one tile each way, with the largest entry of some
// columns in a late tile (the running sum is rescaled), masked entries, a masked column and a masked row, both
// passes match the naive sums on 1 and 2 threads, in float64 and float32.
TEST(LogDomain, TiledAndThreadedPassesMatchNaive) {
  const int threadsBefore = parallelThreads();
  MatD X = gaussian(150, 1100, 21, 2.0);
  for (int j = 0; j < X.cols(); j += 7) X(140, j) += 15.0;  // late maxima: rescaled running sums
  for (int i = 0; i < X.rows(); i += 11) X(i, (i * 37) % X.cols()) = -kInf;
  X.col(600).setConstant(-kInf);
  VecD rowShift = gaussian(150, 1, 22).col(0), colShift = gaussian(1100, 1, 23).col(0);
  rowShift(3) = -kInf;
  colShift(5) = -kInf;
  VecD naiveRows = naiveRowLse(X, colShift), naiveCols = naiveColLse(X, rowShift);
  for (int threads : {1, 2}) {
    setParallelThreads(threads);
    EXPECT_TRUE(matricesNear(rowLogSumExp(X, colShift), naiveRows, 1e-12)) << threads << " thread(s)";
    EXPECT_TRUE(matricesNear(colLogSumExp(X, rowShift), naiveCols, 1e-12)) << threads << " thread(s)";
    EXPECT_TRUE(matricesNear(colLogSumExp<float>(X.cast<float>(), rowShift.cast<float>()), naiveCols, 1e-4))
        << threads << " thread(s)";
  }
  EXPECT_EQ(naiveCols(600), -kInf);
  setParallelThreads(threadsBefore);
}

// rowClosurePass: the row closure's LSE and the next column LSE from one pass, the column sums taken from the
// row pass's exponentials over fixed blocks of 64 rows. On 150 × 1100 (three blocks, the last short) with late
// row maxima, a masked column (shift −inf: its LSE is −inf, as it carries no mass) and an inactive row (log
// marginal −inf): both match the naive sums over u = closure on 1 and 2 threads in float64 and float32, with the
// same bits on both thread counts.
TEST(LogDomain, RowClosurePassGivesTheRowAndNextColumnLogSumExps) {
  const int threadsBefore = parallelThreads();
  MatD X = gaussian(150, 1100, 41, 2.0);
  for (int j = 0; j < X.cols(); j += 7) X(140, j) += 15.0;
  VecD colShift = gaussian(1100, 1, 42).col(0), logMu = VecD::Constant(150, -std::log(150.0));
  colShift(5) = -kInf;
  logMu(3) = -kInf;
  const VecD rowLse = naiveRowLse(X, colShift);
  VecD u = logMu - rowLse;
  u(3) = -kInf;
  VecD colLse = naiveColLse(X, u);
  colLse(5) = -kInf;
  RowClosurePass<double> one;
  RowClosurePass<float> one32;
  for (int threads : {1, 2}) {
    setParallelThreads(threads);
    const RowClosurePass<double> pass = rowClosurePass(X, colShift, logMu);
    const RowClosurePass<float> pass32 = rowClosurePass<float>(X.cast<float>(), colShift.cast<float>(),
                                                              logMu.cast<float>());
    EXPECT_TRUE(matricesNear(pass.rowLse, rowLse, 1e-12)) << threads << " thread(s)";
    EXPECT_TRUE(matricesNear(pass.colLse, colLse, 1e-12)) << threads << " thread(s)";
    EXPECT_TRUE(matricesNear(pass32.rowLse, rowLse, 1e-4)) << threads << " thread(s)";
    EXPECT_TRUE(matricesNear(pass32.colLse, colLse, 1e-4)) << threads << " thread(s)";
    if (threads == 1) {
      one = pass;
      one32 = pass32;
    } else {
      EXPECT_TRUE(test::matricesIdentical(pass.colLse, one.colLse));
      EXPECT_TRUE(test::matricesIdentical(pass32.colLse, one32.colLse));
    }
  }
  setParallelThreads(threadsBefore);
}

// A column whose plan entries all lie below the type's range (its scores 200 below every row's maximum in float32,
// 800 in float64) sums to 0 from the row pass's exponentials; the pass then gives the exact column LSE (the
// tiled colLogSumExp over u), which is finite there.
TEST(LogDomain, RowClosurePassFallsBackWhereTheColumnSumsUnderflow) {
  auto check = [](auto zero, double below) {
    using T = decltype(zero);
    Mat<T> X = gaussian(100, 40, 43).cast<T>();
    X.col(7).array() -= T(below);
    const Vec<T> colShift = Vec<T>::Zero(40), logMu = Vec<T>::Constant(100, -std::log(T(100)));
    const RowClosurePass<T> pass = rowClosurePass(X, colShift, logMu);
    const Vec<T> exact = colLogSumExp(X, Vec<T>(logMu - pass.rowLse));
    EXPECT_TRUE(std::isfinite(pass.colLse(7))) << pass.colLse(7);
    EXPECT_TRUE(test::matricesIdentical(pass.colLse, exact));
  };
  check(0.0f, 200.0);
  check(0.0, 800.0);
}

// expPlan's extras come from the pass that forms the plan, block of rows by block of rows: on a plan of several
// blocks per thread (1000 rows of 1100 doubles: blocks of 125 rows) the row sums and the output A·V are the same
// bits as summing the finished plan and rowProduct(plan, V), on 1 and 2 threads, in place in X's buffer too.
TEST(LogDomain, ThePlanPassGivesTheRowSumsAndTheOutputOfTheFinishedPlan) {
  const int threadsBefore = parallelThreads();
  const MatD X = gaussian(1000, 1100, 44);
  const VecD ut = gaussian(1000, 1, 45).col(0), vt = gaussian(1100, 1, 46).col(0);
  const MatD V = gaussian(1100, 19, 47);
  for (int threads : {1, 2}) {
    setParallelThreads(threads);
    MatD plan, output, inPlace = X, inPlaceOutput;
    VecD rowSums;
    expPlan(X, ut, vt, 2.0, plan, PlanPassExtras<double>{&rowSums, &V, &output});
    expPlan(inPlace, ut, vt, 2.0, inPlace, PlanPassExtras<double>{nullptr, &V, &inPlaceOutput});
    MatD alone;
    expPlan(X, ut, vt, 2.0, alone);
    EXPECT_TRUE(test::matricesIdentical(plan, alone)) << threads << " thread(s)";
    EXPECT_TRUE(test::matricesIdentical(inPlace, alone)) << threads << " thread(s)";
    EXPECT_TRUE(test::matricesIdentical(output, rowProduct(alone, V))) << threads << " thread(s)";
    EXPECT_TRUE(test::matricesIdentical(inPlaceOutput, output)) << threads << " thread(s)";
    const VecD sums = alone.rowwise().sum();
    EXPECT_TRUE(matricesNear(rowSums, sums, 1e-13 * sums.maxCoeff())) << threads << " thread(s)";
    const MatD product = alone * V, magnitude = alone * V.cwiseAbs();
    EXPECT_TRUE(matricesNear(output, product, 1e-13 * magnitude.maxCoeff())) << threads << " thread(s)";
  }
  setParallelThreads(threadsBefore);
}

// The passes exponentiate a row in chunks (asking for the next row's columns as they go): the chunks must give
// the bits of the whole row's expression, the plan pass's entries and the row log-sum-exp alike, also where rows
// start off a vector boundary (odd column counts) and end in a partial packet, in float32 and float64.
template <class T>
void expectChunkedPassesEqualWholeRows(Eigen::Index columns) {
  const Mat<T> X = gaussian(9, columns, 48, 3.0).cast<T>();
  const Vec<T> ut = gaussian(9, 1, 49).col(0).cast<T>(), vt = gaussian(columns, 1, 50).col(0).cast<T>();
  Mat<T> plan, whole(X.rows(), X.cols());  // same shape, so their rows sit alike against vector boundaries
  expPlan(X, ut, vt, T(0.5), plan);
  const Vec<T> lse = rowLogSumExp(X, vt);
  for (Eigen::Index i = 0; i < X.rows(); ++i) {
    whole.row(i) = T(0.5) * exactExp((X.row(i).array() + ut(i)) + vt.transpose().array());
    EXPECT_TRUE(test::matricesIdentical(plan.row(i), whole.row(i))) << "row " << i << " of " << columns;
    const Eigen::Array<T, 1, Eigen::Dynamic> shifted = X.row(i).array() + vt.transpose().array();
    const T m = shifted.maxCoeff();
    EXPECT_EQ(lse(i), m + std::log(exactExp(shifted - m).sum())) << "row " << i << " of " << columns;
  }
}

TEST(LogDomain, ChunkedRowPassesHaveTheBitsOfWholeRows) {
  for (Eigen::Index columns : {5, 333, 1100}) {
    expectChunkedPassesEqualWholeRows<float>(columns);
    expectChunkedPassesEqualWholeRows<double>(columns);
  }
}

TEST(LogDomain, ScoresAreScaledDotProducts) {
  for (int d : {1, 8, 32}) {
    const MatD Q = gaussian(5, d, 10 + d), K = gaussian(7, d, 20 + d);
    MatD expected(5, 7);
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 7; ++j) expected(i, j) = Q.row(i).dot(K.row(j)) / std::sqrt(double(d));
    const MatD S = scores(Q, K);
    EXPECT_TRUE(matricesNear(S, expected, 1e-12)) << "d=" << d;
    const Mat<float> S32 = scores<float>(Q.cast<float>(), K.cast<float>());
    EXPECT_TRUE(matricesNear(S32, expected, 1e-5)) << "d=" << d;
  }
}

// The scores are formed in blocks of rows (ops/score_blocks.h): on shapes of several blocks with a short last
// one, wide and tall, S is the naive product on 1 and 2 threads, the same bits on both, and the fused
// scaledScores(Q, K, eps) makes exactly the roundings of scaledScores(scores(Q, K), eps).
TEST(LogDomain, BlockedScoresMatchNaiveOnAnyThreadCount) {
  const int threadsBefore = parallelThreads();
  for (const auto& [nq, nk] : {std::pair{1001, 300}, std::pair{77, 4000}, std::pair{9, 9}}) {
    SCOPED_TRACE(::testing::Message() << nq << " x " << nk);
    const MatD Q = gaussian(nq, 16, 31), K = gaussian(nk, 16, 32);
    const MatD expected = (Q * K.transpose()) / 4.0;
    EXPECT_GT(scoreBlockCount<double>(nq, nk), 1);
    setParallelThreads(1);
    const MatD one = scores(Q, K);
    const Mat<float> one32 = scaledScores<float>(Q.cast<float>(), K.cast<float>(), 0.5);
    setParallelThreads(2);
    const MatD two = scores(Q, K);
    EXPECT_TRUE(matricesNear(one, expected, 1e-12));
    EXPECT_TRUE(test::matricesIdentical(one, two));
    EXPECT_TRUE(test::matricesIdentical(scaledScores(Q, K, 0.5), scaledScores(two, 0.5)));
    EXPECT_TRUE(test::matricesIdentical(one32, scaledScores<float>(Q.cast<float>(), K.cast<float>(), 0.5)));
  }
  setParallelThreads(threadsBefore);
}

TEST(LogDomain, DenseSizeGuard) {
  EXPECT_NO_THROW(checkDenseSize(64, 64, sizeof(double), "plan"));
  // 10^7 × 10^7 doubles (800 TB) can never be formed.
  EXPECT_TRUE(test::throwsWith<ResourceError>([] { checkDenseSize(10'000'000, 10'000'000, sizeof(double), "plan"); }));
}

}  // namespace
}  // namespace tl
