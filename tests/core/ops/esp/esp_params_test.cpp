// ESP parameters, slicers and rank couplings: the schema defaults of the glossary, the registry path,
// slice directions (docs/operators/esp.md#slicers), the 1-D rank couplings of
// docs/operators/esp.md#unequal-sizes, and bad input that must
// be refused with a message naming the parameter.
#include <gtest/gtest.h>

#include <cmath>

#include "io/npy.h"
#include "ops/registry.h"
#include "support/esp_test_util.h"

namespace tl {
namespace {

using test::espInput;
using test::espParams;
using test::matricesNear;
using test::near;
using test::throwsWith;

const OperatorRegistry& reg() { return OperatorRegistry::builtin(); }

TEST(EspRegistry, DefaultsFollowTheGlossary) {
  const OperatorSpec spec = reg().parse("esp");
  EXPECT_DOUBLE_EQ(getReal(spec.params, "tau"), 0.1);
  EXPECT_DOUBLE_EQ(getReal(spec.params, "p"), 2.0);
  EXPECT_EQ(getString(spec.params, "sort"), "hard");
  EXPECT_DOUBLE_EQ(getReal(spec.params, "sort_temp"), 1e-3);
  EXPECT_EQ(getString(spec.params, "ties"), "split");
  EXPECT_EQ(getString(spec.params, "slicer"), "axis");
  EXPECT_EQ(getString(spec.params, "mask_mode"), "subsequence");
  EXPECT_EQ(spec.params.count("slices"), 0u);
  const EspParams p = EspParams::from(spec.params);
  EXPECT_EQ(p.sort, SortMode::Hard);
  EXPECT_EQ(p.ties, TiePolicy::Split);
  EXPECT_EQ(p.rankCoupling, RankCoupling::NorthWestCorner);
  EXPECT_EQ(p.compat, EspCompat::Paper);
  const OperatorSpec again = reg().parse(spec.toString());
  EXPECT_EQ(again.params, spec.params);
}

TEST(EspRegistry, OperatorMatchesDirectCallAndHasLazyPath) {
  const auto in = espInput(9, 9, 4, 5);
  const auto op = reg().create(reg().parse("esp:tau=0.7,ties=break"));
  ASSERT_TRUE(op->structuredPlan()) << "hard ESP keeps its slice matchings";
  const auto p = espParams(0.7, SortMode::Hard, TiePolicy::Break);
  EXPECT_TRUE(matricesNear(op->run(in, noFeedback()).plan.dense(), espAttention(in, p).plan.dense(), 0.0));
  EXPECT_TRUE(matricesNear(op->run(in.cast<float>(), noFeedback()).plan.dense(), espAttention(in.cast<float>(), p).plan.dense(), 0.0));
  const auto structured = op->run(in, noFeedback());
  EXPECT_FALSE(structured.plan.isDense());
  EXPECT_TRUE(matricesNear(*structured.output, structured.plan.dense() * *in.V, 1e-12)) << "A·V by gathers = dense";
  EXPECT_FALSE(reg().create(reg().parse("esp:sort=soft"))->structuredPlan());
}

TEST(EspRegistry, RefusesBadParameters) {
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("esp:tau=-1"); }, {"tau"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("esp:p=0"); }, {"p"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("esp:sort_temp=0"); }, {"sort_temp"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("esp:mask_mode=keep-queries"); }, {"mask_mode"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().parse("esp:slicer=sphere"); }, {"slicer"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)reg().create(reg().parse("esp:slicer=file")); }, {"slices"}));
  EXPECT_TRUE(
      throwsWith<InvalidArgument>([] { (void)reg().create(reg().parse("esp:slices=/tmp/x.npy")); }, {"slices", "slicer=file"}));
  EXPECT_TRUE(throwsWith<FileError>([] { (void)reg().create(reg().parse("esp:slicer=file,slices=/nonexistent/t.npy")); },
                                    {"slices", "/nonexistent/t.npy"}));
}

TEST(EspInput, RefusesBadInputNamingTheCulprit) {
  auto in = espInput(6, 6, 3, 7);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)espAttention(in, espParams(-0.5)); }, {"tau"}));
  EspParams keep = espParams(0.1);
  keep.maskMode = MaskMode::KeepQueries;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)espAttention(in, keep); }, {"mask_mode", "subsequence"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)espLazyOutput(in, keep); }, {"mask_mode"}));
  EspParams axisL = espParams(0.1);
  axisL.slices.L = 5;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)espAttention(in, axisL); }, {"L", "slicer=random"}));
  in.Q(2, 1) = std::nan("");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)espAttention(in, espParams(0.1)); }, {"Q", "non-finite"}));
  in.Q(2, 1) = 0;
  in.K(0, 0) = INFINITY;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)espLazyOutput(in, espParams(0.1)); }, {"K"}));
}

// slicer=random: L seeded unit directions; the same seed gives the same Θ and result; slicer=file with that Θ
// gives exactly the same result; the dense reference agrees.
TEST(EspSlicers, RandomDirectionsAreSeededUnitVectors) {
  SliceSpec spec;
  spec.slicer = Slicer::Random;
  spec.L = 12;
  spec.seed = 42;
  const MatD theta = sliceDirections(spec, 5);
  ASSERT_EQ(theta.rows(), 12);
  ASSERT_EQ(theta.cols(), 5);
  EXPECT_TRUE(matricesNear(theta.rowwise().norm(), VecD::Ones(12), 1e-15));
  EXPECT_TRUE(matricesNear(sliceDirections(spec, 5), theta, 0.0));
  spec.seed = 43;
  EXPECT_GT((sliceDirections(spec, 5) - theta).cwiseAbs().maxCoeff(), 0.1);
  spec.L = 0;
  EXPECT_EQ(sliceDirections(spec, 5).rows(), 5) << "L = 0 means d slices";
  SliceSpec axis;
  EXPECT_TRUE(matricesNear(sliceDirections(axis, 4), MatD::Identity(4, 4), 0.0));
}

TEST(EspSlicers, FileEqualsRandomWithTheSameDirections) {
  test::TempDir dir;
  const auto in = espInput(15, 15, 4, 9);
  const auto random = reg().create(reg().parse("esp:slicer=random,L=20,seed=7,tau=0.3"));
  SliceSpec spec;
  spec.slicer = Slicer::Random;
  spec.L = 20;
  spec.seed = 7;
  const MatD theta = sliceDirections(spec, 4);
  writeNpy(dir.file("theta.npy"), theta);
  const auto fromFile = reg().create(reg().parse("esp:slicer=file,slices=" + dir.file("theta.npy") + ",tau=0.3"));
  const auto a = random->run(in, noFeedback()), b = fromFile->run(in, noFeedback());
  EXPECT_TRUE(matricesNear(a.plan.dense(), b.plan.dense(), 0.0));
  EXPECT_EQ(a.extras.at(EspExtras::weights).rows(), 20);
  EXPECT_EQ(a.extras.at(EspExtras::matchings).rows(), 20);
  const auto ref = test::referenceHardEsp(in.Q, in.K, theta, 0.3, 2);
  EXPECT_TRUE(matricesNear(a.plan.dense(), ref.plan, 1e-12));
  EXPECT_TRUE(matricesNear(a.extras.at(EspExtras::costs).col(0), ref.costs, 1e-12));
  // For random slices too: every matching is the sorted matching of its projections.
  for (int l = 0; l < 20; ++l)
    EXPECT_EQ(test::matchingRow(a.extras.at(EspExtras::matchings), l), ref.matchings[l]) << "slice " << l;
}

TEST(EspSlicers, FileShapeMustBeLByD) {
  test::TempDir dir;
  writeNpy(dir.file("wide.npy"), MatD(MatD::Ones(3, 5)));
  writeNpy(dir.file("zero.npy"), MatD(MatD::Zero(2, 4)));
  const auto op = reg().create(reg().parse("esp:slicer=file,slices=" + dir.file("wide.npy")));
  const auto in = espInput(6, 6, 4, 3);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)op->run(in, noFeedback()); }, {"slices", "3×5", "L×4"}));
  const auto withL = reg().create(reg().parse("esp:slicer=file,L=4,slices=" + dir.file("wide.npy")));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)withL->run(espInput(6, 6, 5, 3), noFeedback()); }, {"slices", "4×5"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)reg().create(reg().parse("esp:slicer=file,slices=" + dir.file("zero.npy"))); }, {"slices", "zero"}));
}

// docs/operators/esp.md#unequal-sizes: NW corner rows 1/n_q, columns 1/n_k; interpolation rows 1/n_q; both
// I/n when n_q = n_k.
TEST(RankCouplings, Marginals) {
  for (auto [nq, nk] : {std::pair{1, 1}, std::pair{4, 4}, std::pair{7, 4}, std::pair{4, 7}, std::pair{1, 6}, std::pair{6, 1},
                        std::pair{13, 29}}) {
    SCOPED_TRACE(::testing::Message() << nq << "x" << nk);
    for (auto kind : {RankCoupling::NorthWestCorner, RankCoupling::Interpolation}) {
      MatD lambda = MatD::Zero(nq, nk);
      for (const auto& e : rankCoupling(nq, nk, kind)) {
        EXPECT_GT(e.mass, 0.0);
        lambda(e.r, e.s) += e.mass;
      }
      EXPECT_TRUE(matricesNear(lambda.rowwise().sum(), VecD::Constant(nq, 1.0 / nq), 1e-15));
      if (kind == RankCoupling::NorthWestCorner) {
        EXPECT_TRUE(matricesNear(lambda.colwise().sum().transpose(), VecD::Constant(nk, 1.0 / nk), 1e-15));
      }
      if (nq == nk) {
        EXPECT_TRUE(matricesNear(lambda, MatD::Identity(nq, nq) / nq, 0.0));
      }
    }
  }
}

}  // namespace
}  // namespace tl
