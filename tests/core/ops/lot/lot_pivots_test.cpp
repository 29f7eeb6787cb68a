// LOT pivots (k-means, Gaussian, files), the registry entry and the rejection of bad inputs.
#include "ops/lot/lot_pivots.h"

#include <gtest/gtest.h>

#include <cmath>

#include "data/random.h"
#include "io/npy.h"
#include "ops/lot/lot.h"
#include "ops/registry.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::throwsWith;

AttentionInput<double> makeInput(int n, int d, uint64_t seed) {
  AttentionInput<double> in;
  in.Q = gaussian(n, d, seed);
  in.K = gaussian(n, d, seed + 1);
  in.V = gaussian(n, 3, seed + 2);
  return in;
}

MatD unionOf(const AttentionInput<double>& in) {
  MatD points(in.Q.rows() + in.K.rows(), in.Q.cols());
  points << in.Q, in.K;
  return points;
}

VecD softmaxOver(const VecD& logits, double tau) {
  const VecD e = ((logits.array() - logits.maxCoeff()) / tau).exp();
  return e / e.sum();
}

LotParams kmeansParams(int r, uint64_t seed) {
  LotParams p;
  p.r = r;
  p.pivotInit = PivotInit::KMeans;
  p.seed = seed;
  return p;
}

// ---------------------------------------------------------------------------------------------------------
// k-means

TEST(LotPivots, KMeansIsDeterministicGivenTheSeed) {
  const auto in = makeInput(60, 7, 1);
  for (uint64_t seed : {0u, 1u, 12345u}) {
    const MatD a = kmeansCentres(unionOf(in), 6, seed);
    (void)kmeansCentres(unionOf(in), 5, seed);  // evicts the kept result, so the next call computes again
    EXPECT_TRUE(matricesNear(a, kmeansCentres(unionOf(in), 6, seed), 0.0));
    // The operator's pivots are exactly these centres, and two runs are bit-identical.
    const auto r1 = lotAttention(in, kmeansParams(6, seed));
    const auto r2 = lotAttention(in, kmeansParams(6, seed));
    EXPECT_TRUE(matricesNear(r1.extras.at("lot_pivots"), a, 0.0));
    EXPECT_TRUE(matricesNear(r1.plan.dense(), r2.plan.dense(), 0.0));
  }
}

// The last result is kept: the same points, r and seed return it without any work (so even a cancelled request
// gets it), while any other point, r or seed computes afresh (a cancelled request then stops).
TEST(LotPivots, KMeansKeepsItsLastResultForTheSameInputsOnly) {
  const MatD points = unionOf(makeInput(40, 5, 3));
  const MatD centres = kmeansCentres(points, 4, 7);
  Feedback cancelled;
  cancelled.cancel();
  EXPECT_TRUE(matricesNear(kmeansCentres(points, 4, 7, cancelled), centres, 0.0));
  MatD moved = points;
  moved(17, 2) = std::nextafter(moved(17, 2), 1e9);
  EXPECT_THROW(kmeansCentres(moved, 4, 7, cancelled), Canceled);
  EXPECT_THROW(kmeansCentres(points, 3, 7, cancelled), Canceled);
  EXPECT_THROW(kmeansCentres(points, 4, 8, cancelled), Canceled);
  EXPECT_TRUE(matricesNear(kmeansCentres(points, 4, 7, cancelled), centres, 0.0));
}

// Lloyd's fixed point: every centre is the mean of the points nearest to it.
TEST(LotPivots, KMeansCentresAreMeansOfTheirClusters) {
  const MatD points = gaussian(150, 4, 9);
  const int r = 5;
  const MatD centres = kmeansCentres(points, r, 2);
  MatD sums = MatD::Zero(r, 4);
  VecD counts = VecD::Zero(r);
  for (Eigen::Index i = 0; i < points.rows(); ++i) {
    Eigen::Index best;
    (centres.rowwise() - points.row(i)).rowwise().squaredNorm().minCoeff(&best);
    sums.row(best) += points.row(i);
    counts(best) += 1;
  }
  for (int c = 0; c < r; ++c) {
    ASSERT_GT(counts(c), 0) << "cluster " << c << " is empty";
    EXPECT_TRUE(matricesNear(centres.row(c), sums.row(c) / counts(c), 1e-12)) << "centre " << c;
  }
}

// Well separated clusters are found whatever the seed (k-means++ seeds one centre per cluster).
TEST(LotPivots, KMeansRecoversSeparatedClusters) {
  const MatD truth = (MatD(4, 3) << 10, 0, 0, -10, 0, 0, 0, 10, 0, 0, 0, -10).finished();
  MatD points(200, 3);
  const MatD noise = gaussian(200, 3, 4, 0.1);
  for (int i = 0; i < 200; ++i) points.row(i) = truth.row(i % 4) + noise.row(i);
  for (uint64_t seed = 0; seed < 10; ++seed) {
    const MatD centres = kmeansCentres(points, 4, seed);
    for (int t = 0; t < 4; ++t) {
      const double nearest = (centres.rowwise() - truth.row(t)).rowwise().norm().minCoeff();
      EXPECT_LT(nearest, 0.05) << "seed " << seed << ", true centre " << t;
    }
  }
}

TEST(LotPivots, KMeansOnIdenticalPointsStaysFinite) {
  const MatD points = MatD::Constant(10, 3, 1.5);
  const MatD centres = kmeansCentres(points, 4, 0);
  EXPECT_TRUE(matricesNear(centres, MatD::Constant(4, 3, 1.5), 0.0));
}

// Default (kmeans) masses are uniform; mass_logits replace them.
TEST(LotPivots, KMeansMassesUniformUnlessLogitsGiven) {
  const auto in = makeInput(40, 5, 3);
  const auto r = lotAttention(in, kmeansParams(5, 0));
  EXPECT_TRUE(matricesNear(r.extras.at("lot_pivot_masses"), VecD::Constant(5, 0.2), 1e-15));
  LotParams p = kmeansParams(5, 0);
  p.massLogits = gaussian(5, 1, 8);
  p.massTemp = 0.7;
  EXPECT_TRUE(matricesNear(lotAttention(in, p).extras.at("lot_pivot_masses"), softmaxOver(p.massLogits, 0.7), 1e-15));
}

// ---------------------------------------------------------------------------------------------------------
// Gaussian pivots

TEST(LotPivots, GaussianPivotsFollowTheDocumentedDraw) {
  const int r = 4, d = 9;
  SeededRandom rng(77);
  MatD Z(r, d);
  for (int l = 0; l < r; ++l)
    for (int k = 0; k < d; ++k) Z(l, k) = rng.normal() / 3.0;  // N(0, 1/d), d = 9
  VecD theta(r);
  for (int l = 0; l < r; ++l) theta(l) = 0.5 * rng.normal();
  const LotPivots p = gaussianPivots(r, d, 77);
  EXPECT_TRUE(matricesNear(p.locations, Z, 1e-16));
  EXPECT_TRUE(matricesNear(p.massLogits, theta, 0.0));

  const auto in = makeInput(20, d, 5);
  LotParams params;
  params.r = r;
  params.seed = 77;
  params.pivotInit = PivotInit::Gaussian;
  const auto result = lotAttention(in, params);
  EXPECT_TRUE(matricesNear(result.extras.at("lot_pivots"), p.locations, 0.0));
  EXPECT_TRUE(matricesNear(result.extras.at("lot_pivot_masses"), softmaxOver(theta, 0.5), 1e-15));
}

// ---------------------------------------------------------------------------------------------------------
// Files and the registry

TEST(LotPivots, RegistryDefaults) {
  const auto& reg = OperatorRegistry::builtin();
  const OperatorSpec spec = reg.parse("lot");
  EXPECT_EQ(getInt(spec.params, "r"), 32);
  EXPECT_EQ(getInt(spec.params, "T"), 5);
  EXPECT_DOUBLE_EQ(getReal(spec.params, "eps"), 1.0);
  EXPECT_DOUBLE_EQ(getReal(spec.params, "mass_temp"), 0.5);
  EXPECT_EQ(getString(spec.params, "pivot_init"), "auto");  // k-means unless a pivots file is given
  EXPECT_EQ(getInt(spec.params, "seed"), 0);
  EXPECT_EQ(getString(spec.params, "mask_mode"), "subsequence");
  EXPECT_EQ(spec.params.count("pivots"), 0u);
  EXPECT_EQ(spec.params.count("mass_logits"), 0u);
  const OperatorSpec again = reg.parse(reg.parse("lot:r=8,T=3,eps=0.5,seed=4").toString());
  EXPECT_EQ(getInt(again.params, "r"), 8);
  EXPECT_EQ(getInt(again.params, "seed"), 4);

  // The default operator runs on an ordinary input (k-means pivots, odd T: rows exact) and is lazy.
  const auto op = reg.create(spec);
  ASSERT_TRUE(op->structuredPlan()) << "LOT keeps its factors";
  const auto in = makeInput(64, 16, 2);
  const auto result = op->run(in, noFeedback());
  EXPECT_LE(result.errors.rowMax, 1e-12);
  EXPECT_FALSE(result.plan.isDense());
  EXPECT_TRUE(matricesNear(*result.output, result.plan.dense() * *in.V, 1e-12)) << "A·V through the factors = dense";
  EXPECT_TRUE(matricesNear(*op->run(in.cast<float>(), noFeedback()).output, result.output->cast<float>(), 1e-5));
}

TEST(LotPivots, RegistryOperatorReadsPivotFiles) {
  test::TempDir dir;
  const MatD Z = gaussian(4, 6, 11, 0.4);
  const VecD theta = gaussian(4, 1, 12);
  writeNpy(dir.file("z.npy"), Z);
  writeNpy(dir.file("theta.npy"), theta);
  const auto& reg = OperatorRegistry::builtin();
  const auto op = reg.create(reg.parse("lot:r=4,T=3,eps=0.8,mass_temp=0.3,pivot_init=file,pivots=" +
                                       dir.file("z.npy") + ",mass_logits=" + dir.file("theta.npy")));
  LotParams p;
  p.r = 4;
  p.T = 3;
  p.eps = 0.8;
  p.massTemp = 0.3;
  p.pivotInit = PivotInit::File;
  p.pivots = Z;
  p.massLogits = theta;
  const auto in = makeInput(12, 6, 13);
  const auto fromRegistry = op->run(in, noFeedback());
  const auto direct = lotAttention(in, p);
  EXPECT_TRUE(matricesNear(fromRegistry.plan.dense(), direct.plan.dense(), 0.0));
  EXPECT_TRUE(matricesNear(fromRegistry.extras.at("lot_pivot_masses"), softmaxOver(theta, 0.3), 1e-15));
  // Without mass_logits a pivots file gets uniform masses.
  const auto uniform = reg.create(reg.parse("lot:r=4,pivot_init=file,pivots=" + dir.file("z.npy")));
  EXPECT_TRUE(matricesNear(uniform->run(in, noFeedback()).extras.at("lot_pivot_masses"), VecD::Constant(4, 0.25), 1e-15));
}

TEST(LotPivots, MassLogitsAcceptRowOrColumnVectors) {
  test::TempDir dir;
  writeNpy(dir.file("row.npy"), MatD(gaussian(1, 3, 1)));
  writeNpy(dir.file("col.npy"), MatD(gaussian(3, 1, 1)));
  EXPECT_TRUE(matricesNear(readMassLogits(dir.file("row.npy"), 3), readMassLogits(dir.file("col.npy"), 3), 0.0));
  writeNpy(dir.file("square.npy"), MatD(gaussian(2, 2, 1)));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)readMassLogits(dir.file("square.npy"), 4); },
                                          {"mass_logits", "square.npy", "r = 4"}));
}

// ---------------------------------------------------------------------------------------------------------
// Bad inputs: InvalidArgument naming the parameter and the expected value

LotParams filePivots(int r, int d) {
  LotParams p;
  p.r = r;
  p.pivotInit = PivotInit::File;
  p.pivots = gaussian(r, d, 21);
  return p;
}

TEST(LotPivots, RejectsMorePivotsThanTokens) {
  const auto in = makeInput(8, 4, 1);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotAttention(in, kmeansParams(9, 0)); }, {"r = 9", "n = 8"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotOutput(in, filePivots(9, 4)); }, {"r = 9", "n = 8"}));
  AttentionInput<double> masked = in;
  masked.mask = test::makeMask({true, true, false, true, false, true, true, true});
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotAttention(masked, kmeansParams(7, 0)); }, {"r = 7", "n = 6"}));
  EXPECT_NO_THROW((void)lotAttention(masked, kmeansParams(6, 0)));
}

TEST(LotPivots, RejectsPivotShapesAndValues) {
  const auto in = makeInput(10, 4, 1);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotAttention(in, filePivots(3, 5)); }, {"pivots", "3×4", "d"}));
  LotParams shortLogits = filePivots(3, 4);
  shortLogits.massLogits = VecD::Zero(2);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotAttention(in, shortLogits); }, {"mass_logits", "r = 3"}));
  LotParams nan = filePivots(3, 4);
  nan.pivots(1, 2) = std::nan("");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotAttention(in, nan); }, {"pivots", "NaN"}));
  LotParams underflow = filePivots(3, 4);
  underflow.massLogits = (VecD(3) << 0, -1e4, 0).finished();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotAttention(in, underflow); }, {"pivot 1", "mass_temp"}));
}

TEST(LotPivots, RejectsBadParameters) {
  const auto in = makeInput(10, 4, 1);
  auto with = [](auto change) {
    LotParams p = kmeansParams(3, 0);
    change(p);
    return p;
  };
  const std::vector<std::pair<LotParams, std::vector<std::string>>> bad = {
      // Ranges come from the schema, with the same message as on the command line.
      {with([](LotParams& p) { p.T = 0; }), {"'T' = 0", "[1, 100000]"}},
      {with([](LotParams& p) { p.eps = 0; }), {"'eps' = 0", "(0, 1e+06]"}},
      {with([](LotParams& p) { p.eps = -1; }), {"'eps' = -1", "(0, 1e+06]"}},
      {with([](LotParams& p) { p.eps = std::nan(""); }), {"'eps' = nan", "(0, 1e+06]"}},
      {with([](LotParams& p) { p.massTemp = 0; }), {"'mass_temp' = 0", "(0, 1e+06]"}},
      {with([](LotParams& p) { p.r = 0; }), {"'r' = 0", "[1, 4096]"}},
      {with([](LotParams& p) { p.maskMode = MaskMode::KeepQueries; }), {"mask_mode", "subsequence"}},
      {with([](LotParams& p) { p.pivotInit = PivotInit::File; }), {"pivot_init=file", "pivots="}},
      {with([](LotParams& p) { p.pivots = MatD::Zero(3, 4); }), {"pivot_init=kmeans", "pivot_init=file"}},
  };
  for (const auto& [params, needles] : bad) {
    EXPECT_TRUE(throwsWith<InvalidArgument>([&, &p = params] { (void)lotAttention(in, p); }, needles));
    EXPECT_TRUE(throwsWith<InvalidArgument>([&, &p = params] { (void)lotOutput(in, p); }, needles));
  }
  AttentionInput<double> noValues = in;
  noValues.V.reset();
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)lotOutput(noValues, kmeansParams(3, 0)); }, {"V"}));
}

TEST(LotPivots, RegistryRejectsBadText) {
  const auto& reg = OperatorRegistry::builtin();
  for (const auto& [text, needle] : std::vector<std::pair<std::string, std::string>>{
           {"lot:r=0", "r"}, {"lot:T=0", "T"}, {"lot:eps=0", "eps"}, {"lot:mass_temp=-1", "mass_temp"},
           {"lot:pivot_init=grid", "pivot_init"}, {"lot:mask_mode=keep-queries", "mask_mode"}}) {
    EXPECT_TRUE(throwsWith<InvalidArgument>([&, &t = text] { (void)reg.create(reg.parse(t)); }, {needle})) << text;
  }
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)reg.create(reg.parse("lot:pivot_init=file")); },
                                          {"pivot_init=file", "pivots="}));

  test::TempDir dir;
  writeNpy(dir.file("z5.npy"), MatD(gaussian(5, 4, 1)));
  writeNpy(dir.file("theta3.npy"), VecD(gaussian(3, 1, 1)));
  // A pivots file sets r to its number of rows, with pivot_init=auto (the default) or file: the issue's
  // "lot:pivots=Z.npy,mass_logits=w.npy,T=5,eps=1" needs neither r nor pivot_init.
  for (const std::string& text : {"lot:pivots=" + dir.file("z5.npy"), "lot:r=4,pivot_init=file,pivots=" + dir.file("z5.npy")}) {
    const auto op = reg.create(reg.parse(text));
    AttentionInput<double> in;
    in.Q = gaussian(9, 4, 2);
    in.K = gaussian(9, 4, 3);
    EXPECT_EQ(op->run(in, noFeedback()).extras.at("lot_pivots").rows(), 5) << text;
  }
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)reg.create(reg.parse("lot:r=5,pivot_init=kmeans,pivots=" + dir.file("z5.npy"))); },
      {"pivot_init=file"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)reg.create(reg.parse("lot:r=5,pivot_init=file,pivots=" + dir.file("z5.npy") +
                                       ",mass_logits=" + dir.file("theta3.npy"))); },
      {"mass_logits", "theta3.npy", "r = 5"}));
  EXPECT_TRUE(throwsWith<FileError>(
      [&] { (void)reg.create(reg.parse("lot:r=5,pivot_init=file,pivots=" + dir.file("missing.npy"))); },
      {"missing.npy"}));
}

}  // namespace
}  // namespace tl
