// DiffTransformer attention (docs/operators/diff.md#definition, #checks): A = softmax(Q1K1ᵀ/√h)
// − lambda·softmax(Q2K2ᵀ/√h) with the head dimension split in halves. References are written here with
// test_util.h's row softmax.
#include "ops/diff/diff.h"

#include <gtest/gtest.h>

#include <cstring>

#include "ops/registry.h"
#include "ops/softmax/row_softmax.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;
using test::referenceRowSoftmax;
using test::referenceScores;
using test::throwsWith;

AttentionInput<double> makeInput(int nq, int nk, int d, uint64_t seed) {
  AttentionInput<double> in;
  in.Q = gaussian(nq, d, seed);
  in.K = gaussian(nk, d, seed + 1);
  in.V = gaussian(nk, 3, seed + 2);
  return in;
}

DiffParams params(double lambda) {
  DiffParams p;
  p.lambda = lambda;
  return p;
}

MatD referenceDiff(const AttentionInput<double>& in, double lambda) {
  const int h = int(in.Q.cols()) / 2;
  const MatD first = referenceRowSoftmax(referenceScores(in.Q.leftCols(h), in.K.leftCols(h)));
  const MatD second = referenceRowSoftmax(referenceScores(in.Q.rightCols(h), in.K.rightCols(h)));
  return first - lambda * second;
}

TEST(Diff, EqualsDifferenceOfHalfSoftmaxes) {
  // The last two span several blocks of rows and several of the pass's chunks of the second map per block.
  for (auto [nq, nk, d] : {std::tuple{1, 1, 2}, std::tuple{9, 9, 8}, std::tuple{7, 12, 4}, std::tuple{64, 64, 32},
                           std::tuple{300, 77, 16}, std::tuple{50, 1031, 8}})
    for (double lambda : {0.0, 0.33, 0.8, -0.2}) {
      SCOPED_TRACE(::testing::Message() << nq << "x" << nk << " d=" << d << " lambda=" << lambda);
      const auto in = makeInput(nq, nk, d, 3 * nq + d);
      const auto r = diffAttention(in, params(lambda));
      const MatD expected = referenceDiff(in, lambda);
      EXPECT_TRUE(matricesNear(r.plan.dense(), expected, 1e-12));
      ASSERT_TRUE(r.output);
      EXPECT_TRUE(matricesNear(*r.output, expected * *in.V, 1e-12));
      // Rows sum to 1 − lambda: against the doubly-stochastic row target 1 the error is |lambda|.
      EXPECT_TRUE(matricesNear(r.plan.dense().rowwise().sum(), VecD::Constant(nq, 1 - lambda), 1e-12));
      EXPECT_TRUE(near(r.errors.rowMax, std::abs(lambda), 1e-12));
      const VecD colDev = (r.plan.dense().colwise().sum().transpose().array() - double(nq) / nk).abs();
      EXPECT_TRUE(near(r.errors.colMax, colDev.maxCoeff(), 1e-12));
      ASSERT_EQ(r.errorHistory.size(), 1u);
      const auto r32 = diffAttention(in.cast<float>(), params(lambda));
      EXPECT_TRUE(matricesNear(r32.plan.dense().cast<double>(), expected, 1e-6));
    }
}

// lambda = 0 is softmax attention on (Q1, K1).
// The one-pass plan has the bits of the two maps formed whole and subtracted (ops/diff/diff.cpp keeps the second
// map's rows where a whole matrix's would sit relative to the vector alignment): odd key counts put the rows at
// every offset, float32 and float64.
template <class T>
void expectBitsOfTwoWholeMaps() {
  for (auto [nq, nk] : {std::pair{300, 77}, std::pair{61, 1031}}) {
    SCOPED_TRACE(::testing::Message() << nq << "x" << nk);
    const AttentionInput<T> in = makeInput(nq, nk, 16, uint64_t(nq)).template cast<T>();
    const Mat<T> Q1 = in.Q.leftCols(8), K1 = in.K.leftCols(8), Q2 = in.Q.rightCols(8), K2 = in.K.rightCols(8);
    const Mat<T> whole = rowSoftmax<T>(Q1, K1, nullptr, nullptr).plan - T(0.8) * rowSoftmax<T>(Q2, K2, nullptr, nullptr).plan;
    const Mat<T> onePass = diffAttention(in, params(0.8)).plan.dense();
    for (Eigen::Index i = 0; i < nq; ++i)
      ASSERT_EQ(std::memcmp(onePass.row(i).data(), whole.row(i).data(), sizeof(T) * size_t(nk)), 0) << "row " << i;
  }
}

TEST(Diff, OnePassHasTheBitsOfTwoWholeMaps) {
  expectBitsOfTwoWholeMaps<float>();
  expectBitsOfTwoWholeMaps<double>();
}

TEST(Diff, LambdaZeroIsSoftmaxOnTheFirstHalf) {
  const auto in = makeInput(11, 11, 6, 5);
  AttentionInput<double> first;
  first.Q = in.Q.leftCols(3);
  first.K = in.K.leftCols(3);
  const auto softmax = OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse("softmax"));
  EXPECT_TRUE(matricesNear(diffAttention(in, params(0)).plan.dense(), softmax->run(first, noFeedback()).plan.dense(), 0.0));
}

TEST(Diff, PlanCanBeNegative) {
  const auto r = diffAttention(makeInput(16, 16, 8, 7), params(0.9));
  EXPECT_LT(r.plan.dense().minCoeff(), 0.0);
}

TEST(Diff, SubsequenceMaskDropsPaddedTokens) {
  auto in = makeInput(8, 8, 4, 9);
  in.mask = test::makeMask({true, true, false, true, false, true, true, true});
  const std::vector<int> idx = {0, 1, 3, 5, 6, 7};
  AttentionInput<double> sub;
  sub.Q = test::selectRows(in.Q, idx);
  sub.K = test::selectRows(in.K, idx);
  const auto r = diffAttention(in, params(0.5));
  const MatD expected = referenceDiff(sub, 0.5);
  for (size_t a = 0; a < idx.size(); ++a)
    for (size_t b = 0; b < idx.size(); ++b)
      EXPECT_TRUE(near(r.plan(idx[a], idx[b]), expected(Eigen::Index(a), Eigen::Index(b)), 1e-12));
  EXPECT_EQ(r.plan.dense().row(2).cwiseAbs().sum() + r.plan.dense().col(4).cwiseAbs().sum(), 0.0);
}

TEST(Diff, RefusesOddHeadDimensionAndKeepQueries) {
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)diffAttention(makeInput(4, 4, 5, 1), params(0.5)); },
                                          {"d = 5", "even"}));
  DiffParams keep = params(0.5);
  keep.maskMode = MaskMode::KeepQueries;
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)OperatorRegistry::builtin().parse("diff:mask_mode=keep-queries"); },
                                          {"mask_mode"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)diffAttention(makeInput(4, 4, 4, 1), keep); }, {"mask_mode"}));
  auto nan = makeInput(4, 4, 4, 1);
  nan.K(1, 1) = std::nan("");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)diffAttention(nan, params(0.5)); }, {"K"}));
}

TEST(Diff, RegistryDefaultsAndDescription) {
  const auto& info = OperatorRegistry::builtin().get("diff");
  EXPECT_NE(info.description.find("halves"), std::string::npos) << "the GUI must say where Q1/Q2 come from";
  const OperatorSpec spec = OperatorRegistry::builtin().parse("diff:lambda=0.8");
  EXPECT_DOUBLE_EQ(DiffParams::from(spec.params).lambda, 0.8);
  const auto in = makeInput(6, 6, 4, 2);
  const auto op = OperatorRegistry::builtin().create(spec);
  EXPECT_FALSE(op->structuredPlan());
  EXPECT_TRUE(matricesNear(op->run(in, noFeedback()).plan.dense(), referenceDiff(in, 0.8), 1e-12));
}

}  // namespace
}  // namespace tl
