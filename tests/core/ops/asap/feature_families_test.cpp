// The feature families of the ASAP design ablation (docs/operators/asap.md#feature-families): hand-checked
// values of each family (d = 1, so the projections are the inputs), the rank displacement against an
// independent argsort, exact recovery of β when the teacher dual lies in a family's span, the LS solve against a
// direct stacked solve (predict-both's key side included, its target against the teacher's own key dual),
// KL where it is defined, predict-both's plan against P(f̂, ĝ) formed by hand (marginals not exact), and a
// compiled model that records its family, bit for bit, with old manifests read as the sliced potentials.
#include "ops/asap/feature_families.h"

#include <gtest/gtest.h>

#include <Eigen/QR>
#include <algorithm>
#include <numeric>

#include <nlohmann/json.hpp>

#include "common/errors.h"
#include "io/npy.h"
#include "ops/asap/asap.h"
#include "ops/asap/asap_fit.h"
#include "ops/asap/compiled_asap.h"
#include "ops/asap/sliced_potentials.h"
#include "ops/registry.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/slicers.h"
#include "ops/asap/teacher_instance.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::teacherInstance;
using test::throwsWith;

const std::vector<AsapFeatures> kSourceFamilies = {AsapFeatures::Potentials, AsapFeatures::Raw,
                                                   AsapFeatures::RankDisplacement, AsapFeatures::PredictBoth};

MatD column(std::initializer_list<double> values) {
  MatD m(Eigen::Index(values.size()), 1);
  Eigen::Index i = 0;
  for (double v : values) m(i++, 0) = v;
  return m;
}

VecD centred(const VecD& v) { return (v.array() - v.mean()).matrix(); }

// The spec's hand-checked 1-D problem (docs/operators/asap.md#features): x = (0, 1, 3), y = (−1, 0.5, 2), as
// d = 1 inputs with the slice θ = 1 (so x = q and y = k).
const MatD kQ = column({0, 1, 3}), kK = column({-1, 0.5, 2}), kTheta = column({1});

TEST(AsapFeatureFamilies, HandCheckedValues) {
  // Raw: Π x.
  EXPECT_TRUE(matricesNear(sourceFeatures(kQ, kK, kTheta, std::nullopt, AsapFeatures::Raw),
                           column({-4.0 / 3, -1.0 / 3, 5.0 / 3}), 1e-15));
  // Rank displacement: Π(y_(rank(i)) − x_i) = Π(−1, −0.5, −1).
  EXPECT_TRUE(matricesNear(sourceFeatures(kQ, kK, kTheta, std::nullopt, AsapFeatures::RankDisplacement),
                           column({-1.0 / 6, 1.0 / 3, -1.0 / 6}), 1e-15));
  // Potentials: centred f = (−2, −0.5, 2.5), for predict-both too.
  for (AsapFeatures f : {AsapFeatures::Potentials, AsapFeatures::PredictBoth})
    EXPECT_TRUE(matricesNear(sourceFeatures(kQ, kK, kTheta, std::nullopt, f), column({-2, -0.5, 2.5}), 1e-15));
  // Key potentials: g = (0.5, −1.375, −4), centred (mean −1.625).
  EXPECT_TRUE(matricesNear(keyPotentialFeatures(kQ, kK, kTheta, std::nullopt), column({2.125, 0.25, -2.375}), 1e-15));
  // Permuted inputs give permuted features (x = (3, 0, 1), y = (2, −1, 0.5)).
  EXPECT_TRUE(matricesNear(sourceFeatures(column({3, 0, 1}), column({2, -1, 0.5}), kTheta, std::nullopt,
                                          AsapFeatures::RankDisplacement),
                           column({-1.0 / 6, -1.0 / 6, 1.0 / 3}), 1e-15));
  EXPECT_TRUE(matricesNear(keyPotentialFeatures(column({3, 0, 1}), column({2, -1, 0.5}), kTheta, std::nullopt),
                           column({-2.375, 2.125, 0.25}), 1e-15));
}

TEST(AsapFeatureFamilies, MonotoneMapIsTheRightSlopeOfPhi) {
  const VecD x = kQ.col(0), y = kK.col(0);
  // On the atoms: the matched key. Between them: the slope of the interval; outside: the outer rays.
  EXPECT_TRUE(matricesNear(monotoneMapAt(x, y, x), VecD(column({-1, 0.5, 2})), 0.0));
  EXPECT_TRUE(matricesNear(monotoneMapAt(x, y, VecD(column({-5, 0.5, 2.9, 10}))), VecD(column({-1, -1, 0.5, 2})), 0.0));
  // Tied queries share one value (the slope after their block), so the features stay permutation-equivariant.
  EXPECT_TRUE(matricesNear(monotoneMapAt(VecD(column({1, 1, 2})), VecD(column({0, 3, 5})), VecD(column({1, 1, 2}))),
                           VecD(column({3, 3, 5})), 0.0));
}

TEST(AsapFeatureFamilies, RankDisplacementMatchesAnIndependentArgsort) {
  const int n = 9, d = 4, L = 5;
  const MatD Q = gaussian(n, d, 1), K = gaussian(n, d, 2), slices = sliceDirections({Slicer::Random, L, 3, {}}, d);
  const MatD X = Q * slices.transpose() / std::pow(double(d), 0.25), Y = K * slices.transpose() / std::pow(double(d), 0.25);
  MatD expected(n, L);
  for (int l = 0; l < L; ++l) {
    std::vector<int> byX(n), byY(n);
    std::iota(byX.begin(), byX.end(), 0);
    std::iota(byY.begin(), byY.end(), 0);
    std::sort(byX.begin(), byX.end(), [&](int a, int b) { return X(a, l) < X(b, l); });
    std::sort(byY.begin(), byY.end(), [&](int a, int b) { return Y(a, l) < Y(b, l); });
    VecD displacement(n);
    for (int r = 0; r < n; ++r) displacement(byX[size_t(r)]) = Y(byY[size_t(r)], l) - X(byX[size_t(r)], l);
    expected.col(l) = centred(displacement);
  }
  EXPECT_TRUE(matricesNear(sourceFeatures(Q, K, slices, std::nullopt, AsapFeatures::RankDisplacement), expected, 1e-13));
  EXPECT_TRUE(matricesNear(sourceFeatures(Q, K, slices, std::nullopt, AsapFeatures::Raw),
                           (X.rowwise() - X.colwise().mean()).eval(), 1e-13));
}

TEST(AsapFeatureFamilies, PaddedQueriesGetTheFamilysExtensionCentredOnTheActiveMean) {
  const MatD Q = column({0, 1, 7, 3}), K = column({-1, 0.5, 9, 2});
  const Mask active = test::makeMask({true, true, false, true});
  // Active tokens as in the unmasked problem; the padded query (x = 7) extended: raw 7 − 4/3, displacement
  // T(7) − 7 = 2 − 7 − (−5/6).
  EXPECT_TRUE(matricesNear(sourceFeatures(Q, K, kTheta, active, AsapFeatures::Raw),
                           column({-4.0 / 3, -1.0 / 3, 7 - 4.0 / 3, 5.0 / 3}), 1e-15));
  EXPECT_TRUE(matricesNear(sourceFeatures(Q, K, kTheta, active, AsapFeatures::RankDisplacement),
                           column({-1.0 / 6, 1.0 / 3, -5 + 5.0 / 6, -1.0 / 6}), 1e-15));
  // Padded keys: 0 in the key features.
  EXPECT_TRUE(matricesNear(keyPotentialFeatures(Q, K, kTheta, active), column({2.125, 0.25, 0, -2.375}), 1e-15));
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)keyPotentialFeatures(gaussian(4, 2, 1), gaussian(5, 2, 2), gaussian(3, 2, 3), std::nullopt); },
      {"predict-both", "4 queries", "5 keys"}));
}

TEST(AsapFeatureFamilies, NamesRoundTripAndBadOnesAreNamed) {
  for (AsapFeatures f : kSourceFamilies) EXPECT_EQ(parseAsapFeatures(asapFeaturesName(f)), f);
  EXPECT_TRUE(throwsWith<InvalidArgument>([] { (void)parseAsapFeatures("sliced"); }, {"sliced", "rank-displacement"}));
}

// ---- fitting ------------------------------------------------------------------------------------------------

TEST(AsapFeatureFamilies, EveryFamilyRecoversBetaWhenTheDualIsInItsSpan) {
  const int n = 8, d = 4, L = 3;
  const double eps = 0.7;
  const MatD slices = sliceDirections({Slicer::Random, L, 5, {}}, d);
  const VecD betaTrue = column({0.8, -1.3, 0.4});
  for (AsapFeatures family : kSourceFamilies) {
    SCOPED_TRACE(asapFeaturesName(family));
    std::vector<FitInstance> instances;
    for (int m = 0; m < 5; ++m) {
      FitInstance in = teacherInstance(n, d, 40 + 10 * uint64_t(m), eps);
      const VecD a = in.Q.rowwise().squaredNorm() / (2.0 * std::sqrt(double(d)));
      in.dual = sourceFeatures(in.Q, in.K, slices, std::nullopt, family) * betaTrue - a;  // score coordinates
      instances.push_back(in);
    }
    const LayerFit fit = fitLayer(instances, slices, {eps, MaskMode::Subsequence, family}, 0.0, FitKind::Ls);
    EXPECT_TRUE(matricesNear(fit.beta, betaTrue, 1e-9));
    EXPECT_NEAR(fit.quality.r2, 1.0, 1e-12);
    EXPECT_EQ(fit.keyQuality.has_value(), family == AsapFeatures::PredictBoth);
  }
}

TEST(AsapFeatureFamilies, LsEqualsADirectStackedSolveOnBothSides) {
  const int n = 7, d = 4, L = 6;
  const double eps = 0.5, lambdaB = 1e-3;
  const MatD slices = sliceDirections({Slicer::Random, L, 9, {}}, d);
  std::vector<FitInstance> instances;
  for (int m = 0; m < 4; ++m) instances.push_back(teacherInstance(n, d, 70 + 10 * uint64_t(m), eps));
  for (AsapFeatures family : {AsapFeatures::Raw, AsapFeatures::RankDisplacement, AsapFeatures::PredictBoth}) {
    SCOPED_TRACE(asapFeaturesName(family));
    const FitSettings settings{eps, MaskMode::Subsequence, family};
    const LayerFit fit = fitLayer(instances, slices, settings, lambdaB, FitKind::Ls);
    // Stacked rows: [Φ; √λ I] β = [f̄; 0] by QR, with λ = rows·λ_B; the key side likewise on [Ψ; √λ I].
    const Eigen::Index rows = Eigen::Index(instances.size()) * n;
    MatD A = MatD::Zero(rows + L, L), B = MatD::Zero(rows + L, L);
    VecD y = VecD::Zero(rows + L), z = VecD::Zero(rows + L);
    for (size_t m = 0; m < instances.size(); ++m) {
      const FitInstance& in = instances[m];
      const Eigen::Index at = Eigen::Index(m) * n;
      const VecD a = in.Q.rowwise().squaredNorm() / (2.0 * std::sqrt(double(d)));
      const VecD b = in.K.rowwise().squaredNorm() / (2.0 * std::sqrt(double(d)));
      A.middleRows(at, n) = sourceFeatures(in.Q, in.K, slices, std::nullopt, family);
      y.segment(at, n) = centred(in.dual + a);
      B.middleRows(at, n) = keyPotentialFeatures(in.Q, in.K, slices, std::nullopt);
      // The teacher's own key dual (its T = 4 run ends on the key side: v = K(u)).
      AttentionInput<double> input{in.Q, in.K, std::nullopt, std::nullopt};
      SinkhornParams p;
      p.T = 4;
      p.eps = eps;
      z.segment(at, n) = centred(sinkhornAttention(input, p).v + b);
    }
    const double rootLambda = std::sqrt(double(rows) * lambdaB);
    A.bottomRows(L) = rootLambda * MatD::Identity(L, L);
    B.bottomRows(L) = rootLambda * MatD::Identity(L, L);
    EXPECT_TRUE(matricesNear(fit.beta, A.colPivHouseholderQr().solve(y), 1e-9));
    if (family == AsapFeatures::PredictBoth) {
      EXPECT_TRUE(matricesNear(fit.keyBeta, B.colPivHouseholderQr().solve(z), 1e-9));
      EXPECT_GT(fit.keyQuality->r2, 0.0);
    } else {
      EXPECT_EQ(fit.keyBeta.size(), 0);
    }
  }
}

TEST(AsapFeatureFamilies, KlRunsOnTheOtherFamiliesButNotOnPredictBoth) {
  const MatD slices = sliceDirections({Slicer::Random, 4, 2, {}}, 4);
  std::vector<FitInstance> instances;
  for (int m = 0; m < 3; ++m) instances.push_back(teacherInstance(6, 4, 90 + 10 * uint64_t(m), 1.0));
  for (AsapFeatures family : {AsapFeatures::Raw, AsapFeatures::RankDisplacement}) {
    const LayerFit fit = fitLayer(instances, slices, {1.0, MaskMode::Subsequence, family}, 1e-3, FitKind::Kl);
    ASSERT_TRUE(fit.kl.has_value());
    EXPECT_TRUE(fit.kl->converged);
    EXPECT_LT(fit.kl->gradientNorm, kKlGradientTolerance);
  }
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)fitLayer(instances, slices, {1.0, MaskMode::Subsequence, AsapFeatures::PredictBoth}, 1e-3, FitKind::Kl); },
      {"fit=kl", "predict-both"}));
}

// ---- the online operator ------------------------------------------------------------------------------------

AsapParams predictBoth(const MatD& slices, const VecD& beta, const VecD& keyBeta, double eps) {
  AsapParams p;
  p.eps = eps;
  p.features = AsapFeatures::PredictBoth;
  p.slices = slices;
  p.beta = beta;
  p.keyBeta = keyBeta;
  return p;
}

TEST(AsapFeatureFamilies, PredictBothIsThePlanOfBothPredictedDualsWithoutClosure) {
  const int n = 10, d = 4, L = 5;
  const double eps = 0.6;
  const MatD Q = gaussian(n, d, 11), K = gaussian(n, d, 12), slices = gaussian(L, d, 13);
  const VecD beta = gaussian(L, 1, 14, 0.5), keyBeta = gaussian(L, 1, 15, 0.5);
  const auto r = asapAttention(AttentionInput<double>{Q, K, std::nullopt, std::nullopt}, predictBoth(slices, beta, keyBeta, eps));
  // By hand: u = Φβ − a, v = Ψβ_g − b, P ∝ exp((S + u ⊕ v)/eps) with total mass 1, A = n·P.
  const VecD u = sourceFeatures(Q, K, slices, std::nullopt, AsapFeatures::Potentials) * beta -
                 VecD(Q.rowwise().squaredNorm() / (2.0 * std::sqrt(double(d))));
  const VecD v = keyPotentialFeatures(Q, K, slices, std::nullopt) * keyBeta -
                 VecD(K.rowwise().squaredNorm() / (2.0 * std::sqrt(double(d))));
  MatD P = test::planFromDuals(test::referenceScores(Q, K), u, v, eps, 1.0);
  P /= P.sum();
  EXPECT_TRUE(matricesNear(r.plan.dense(), MatD(double(n) * P), 1e-12));
  // No closure: neither marginal is exact (it is not a Sinkhorn step of anything).
  EXPECT_GT(r.errors.rowMax, 1e-3);
  EXPECT_GT(r.errors.colMax, 1e-3);
  EXPECT_NEAR(r.plan.dense().sum(), double(n), 1e-9);
}

TEST(AsapFeatureFamilies, PredictBothUnderKeepQueriesZeroesPaddedKeys) {
  const int n = 6, d = 3;
  const Mask mask = test::makeMask({true, true, true, false, true, false});
  AttentionInput<double> in{gaussian(n, d, 21), gaussian(n, d, 22), std::nullopt, mask};
  AsapParams p = predictBoth(gaussian(4, d, 23), gaussian(4, 1, 24, 0.5), gaussian(4, 1, 25, 0.5), 1.0);
  p.maskMode = MaskMode::KeepQueries;
  const MatD A = asapAttention(in, p).plan.dense();
  EXPECT_EQ(A.col(3).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(A.col(5).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_NEAR(A.sum(), 4.0, 1e-9);  // attention scale n · Σν = n · |J|/n
}

TEST(AsapFeatureFamilies, OperatorRequestsThatCannotRunSayWhy) {
  const MatD Q = gaussian(5, 3, 1), K = gaussian(5, 3, 2);
  AsapParams p = predictBoth(gaussian(4, 3, 3), gaussian(4, 1, 4), gaussian(4, 1, 5), 1.0);
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { (void)asapAttention(AttentionInput<double>{Q, gaussian(6, 3, 2), std::nullopt, std::nullopt}, p); },
      {"predict-both", "keys"}));
  test::TempDir dir;
  const std::string slices = dir.path().string() + "/slices.npy", beta = dir.path().string() + "/beta.npy";
  writeNpy(slices, MatD(gaussian(4, 3, 3)));
  writeNpy(beta, VecD(gaussian(4, 1, 4)));
  const auto& registry = OperatorRegistry::builtin();
  auto make = [&](const std::string& text) { return registry.create(registry.parse(text)); };
  const std::string files = "asap:slices=" + slices + ",beta=" + beta;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { make(files + ",features=predict-both"); }, {"key_beta"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { make(files + ",key_beta=" + beta); }, {"predict-both"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { make(files + ",key_beta=" + beta + ",features=predict-both,variant=asap0"); },
                                          {"asap0", "no closure"}));
  EXPECT_NO_THROW(make(files + ",features=rank-displacement"));
}

// ---- compiled models ----------------------------------------------------------------------------------------

CompiledAsap compiledModel(const std::string& features) {
  CompiledAsap c;
  c.checkpoint = "ckpt";
  c.calibration = "fashion-mnist:train:0-9";
  c.teacher = "sinkhorn:T=4,eps=0.5,mask_mode=subsequence";
  c.T = 4;
  c.eps = 0.5;
  c.closing = "column";
  c.features = features;
  for (int layer : {0, 1}) {
    CompiledAsapLayer l;
    l.layer = layer;
    l.slices = gaussian(5, 8, 10 + layer);
    l.beta = gaussian(5, 1, 20 + layer, 0.3);
    if (features == "predict-both") {
      l.keyBeta = gaussian(5, 1, 30 + layer, 0.3);
      l.keyR2 = 0.6;
      l.keyDelta = 0.9;
    }
    l.fit = "ls";
    c.layers.push_back(l);
  }
  c.roundToStoredPrecision();
  return c;
}

TEST(AsapFeatureFamilies, CompiledModelsRecordTheirFamilyAndRunWithIt) {
  AttentionInput<double> in{gaussian(11, 8, 1), gaussian(11, 8, 2), gaussian(11, 3, 3), std::nullopt};
  const auto& registry = OperatorRegistry::builtin();
  for (AsapFeatures family : kSourceFamilies) {
    SCOPED_TRACE(asapFeaturesName(family));
    test::TempDir dir;
    const CompiledAsap saved = compiledModel(asapFeaturesName(family));
    saveCompiledAsap(dir.path().string(), saved);
    const CompiledAsap loaded = loadCompiledAsap(dir.path().string());
    EXPECT_EQ(loaded.features, asapFeaturesName(family));
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_TRUE(test::matricesIdentical(loaded.layers[i].beta, saved.layers[i].beta));
      EXPECT_TRUE(test::matricesIdentical(loaded.layers[i].keyBeta, saved.layers[i].keyBeta));
      EXPECT_EQ(loaded.layers[i].keyR2, saved.layers[i].keyR2);
    }
    // The folder's operator string names the family and runs it: the plan of the in-memory layer, bit for bit.
    const std::string op = compiledAsapOperator(loaded, dir.path().string()) + ",layer=1";
    EXPECT_EQ(op.find("features=") != std::string::npos, family != AsapFeatures::Potentials);
    const auto fromFolder = registry.create(registry.parse(op))->run(in, noFeedback());
    AsapParams direct;
    direct.eps = 0.5;
    direct.features = family;
    direct.slices = saved.at(1).slices;
    direct.beta = saved.at(1).beta;
    if (family == AsapFeatures::PredictBoth) direct.keyBeta = saved.at(1).keyBeta;
    EXPECT_TRUE(test::matricesIdentical(fromFolder.plan.dense(), asapAttention(in, direct).plan.dense()));
    // Without the features= part, asap:compiled=DIR still runs the recorded family.
    const auto plain = registry.create(registry.parse("asap:compiled=" + dir.path().string() + ",layer=1,eps=0.5"))
                           ->run(in, noFeedback());
    EXPECT_TRUE(test::matricesIdentical(plain.plan.dense(), fromFolder.plan.dense()));
  }
}

TEST(AsapFeatureFamilies, OldManifestsAreSlicedPotentialsAndMismatchesAreNamed) {
  test::TempDir dir;
  const std::string folder = dir.path().string();
  saveCompiledAsap(folder, compiledModel("potentials"));
  nlohmann::json manifest = nlohmann::json::parse(test::readBytes(folder + "/asap.json"));
  manifest.erase("features");  // as written before the families existed
  test::writeBytes(folder + "/asap.json", manifest.dump());
  EXPECT_EQ(loadCompiledAsap(folder).features, "potentials");

  const auto& registry = OperatorRegistry::builtin();
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { registry.create(registry.parse("asap:compiled=" + folder + ",layer=0,eps=0.5,features=raw")); },
      {"features=potentials", "features=raw"}));
  manifest["features"] = "predict-both";  // but no key_beta tensors
  test::writeBytes(folder + "/asap.json", manifest.dump());
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)loadCompiledAsap(folder); }, {"key_beta"}));
  manifest["features"] = "sliced";
  test::writeBytes(folder + "/asap.json", manifest.dump());
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)loadCompiledAsap(folder); }, {"asap.json", "sliced"}));
}

}  // namespace
}  // namespace tl
