// Path sampling (docs/operators/rank-decay.md#paths, oracle O-18), box summaries and the App. G random
// matrices.
#include "rankdecay/path_sampler.h"

#include <gtest/gtest.h>

#include <Eigen/SVD>
#include <numeric>

#include "common/errors.h"
#include "ops/registry.h"
#include "rankdecay/normaliser.h"
#include "rankdecay/random_matrices.h"
#include "rankdecay/residual.h"
#include "rankdecay/rank_decay_test_util.h"

namespace tl::rankdecay {
namespace {

// A record of converged Sinkhorn matrices of random scores (exactly doubly stochastic to rounding).
AttentionRecord doublyStochasticRecord(int layers, int samples, int heads, int n) {
  AttentionRecord record = AttentionRecord::sized(layers, samples, heads);
  SeededRandom rng(11);
  const auto op = makeOperator("sinkhorn:T=2000");
  for (size_t i = 0; i < record.attention.size(); ++i) {
    MatD S(n, n);
    for (Eigen::Index k = 0; k < S.size(); ++k) S.data()[k] = rng.normal();
    const NormalisedAttention a = normaliseScores(*op, S, noFeedback());
    record.attention[i] = a.plan;
    record.errors[i] = a.errors;
  }
  return record;
}

TEST(PathSampler, LayersAreDistinctIncreasingAndDepthLUsesAll) {  // O-18
  SeededRandom rng(1);
  for (int t = 1; t <= 9; ++t)
    for (int rep = 0; rep < 50; ++rep) {
      const SampledPath path = samplePath(rng, t, 9, 4, 3, false);
      ASSERT_EQ(path.layers.size(), size_t(t));
      for (size_t i = 1; i < path.layers.size(); ++i) EXPECT_LT(path.layers[i - 1], path.layers[i]);
      for (int l : path.layers) EXPECT_TRUE(l >= 0 && l < 9);
      for (int b : path.samples) EXPECT_EQ(b, path.samples[0]);  // one sample per path
      for (int h : path.heads) EXPECT_TRUE(h >= 0 && h < 3);
      if (t == 9) {
        std::vector<int> all(9);
        std::iota(all.begin(), all.end(), 0);
        EXPECT_EQ(path.layers, all);
      }
    }
}

TEST(PathSampler, DoublyStochasticProductsKeepUnitNormAndSubmultiplicativeGap) {  // O-18
  const AttentionRecord record = doublyStochasticRecord(5, 2, 2, 12);
  SeededRandom rng(2);
  for (int t = 1; t <= 5; ++t)
    for (int rep = 0; rep < 20; ++rep) {
      const SampledPath path = samplePath(rng, t, 5, 2, 2, false);
      const VecD sigma = Eigen::BDCSVD<MatD>(pathProduct(record, path, ProductOrder::Literal)).singularValues();
      EXPECT_NEAR(sigma(0), 1.0, 1e-12);
      double product = 1;
      for (int i = 0; i < t; ++i)
        product *= Eigen::BDCSVD<MatD>(record.at(path.layers[size_t(i)], path.samples[size_t(i)],
                                                 path.heads[size_t(i)]))
                       .singularValues()(1);
      EXPECT_LE(sigma(1), product + 1e-12);
    }
}

TEST(PathSampler, DepthOneIsTheRatioOfSingleMatricesAndSeedsRepeat) {
  const AttentionRecord record = doublyStochasticRecord(4, 3, 2, 10);
  PathOptions options;
  options.paths = 30;
  options.seed = 5;
  const std::vector<DepthSummary> depths = sampleAttentionPaths(record, options, noFeedback());
  ASSERT_EQ(depths.size(), 4u);
  std::vector<double> singles;
  for (const MatD& P : record.attention) singles.push_back(sigmaRatio(P));
  for (double v : depths[0].values)
    EXPECT_TRUE(std::any_of(singles.begin(), singles.end(), [&](double s) { return s == v; }));
  EXPECT_EQ(sampleAttentionPaths(record, options, noFeedback())[3].values, depths[3].values);
  for (const DepthSummary& d : depths) EXPECT_LE(d.factorMarginalError, 1e-12);
  EXPECT_LT(depths[3].box.median, depths[0].box.median);  // products of contractions lose rank
}

TEST(PathSampler, OrderMattersForNonNormalFactors) {
  AttentionRecord record = AttentionRecord::sized(3, 1, 1);
  SeededRandom rng(3);
  const auto softmax = makeOperator("softmax");
  for (auto& P : record.attention) {
    MatD S(20, 20);
    for (Eigen::Index k = 0; k < S.size(); ++k) S.data()[k] = rng.normal();
    P = normaliseScores(*softmax, S, noFeedback()).plan;
  }
  SampledPath path{{0, 1, 2}, {0, 0, 0}, {0, 0, 0}};
  const MatD literal = pathProduct(record, path, ProductOrder::Literal);
  const MatD network = pathProduct(record, path, ProductOrder::Network);
  EXPECT_LE((literal - record.attention[0] * record.attention[1] * record.attention[2]).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LE((network - record.attention[2] * record.attention[1] * record.attention[0]).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_GT(std::abs(sigmaRatio(literal) - sigmaRatio(network)), 1e-6);
}

TEST(PathSampler, SamplePerLayerNeedsEqualLengths) {
  AttentionRecord record = AttentionRecord::sized(2, 2, 1);
  record.attention = {MatD::Identity(3, 3), MatD::Identity(4, 4), MatD::Identity(3, 3), MatD::Identity(4, 4)};
  PathOptions options;
  options.samplePerLayer = true;
  EXPECT_THROW(sampleAttentionPaths(record, options, noFeedback()), InvalidArgument);
}

TEST(BoxSummary, QuartilesAndWhiskers) {
  const BoxSummary box = summarise({1, 2, 3, 4, 5, 6, 7, 8, 100});
  EXPECT_DOUBLE_EQ(box.median, 5);
  EXPECT_DOUBLE_EQ(box.q1, 3);
  EXPECT_DOUBLE_EQ(box.q3, 7);
  EXPECT_DOUBLE_EQ(box.whiskerLow, 1);
  EXPECT_DOUBLE_EQ(box.whiskerHigh, 8);  // 100 lies beyond q3 + 1.5·IQR = 13
  EXPECT_DOUBLE_EQ(box.max, 100);
}

TEST(RandomMatrices, DecayWithDepthAndTheSkipMimicSlowsIt) {
  RandomMatrixSpec spec;
  spec.n = 12;
  spec.depth = 4;
  PathOptions options;
  options.paths = 40;
  const auto op = makeOperator("sinkhorn:T=50");
  const std::vector<DepthSummary> plain = randomMatrixPaths(*op, spec, options, noFeedback());
  spec.skip = true;
  const std::vector<DepthSummary> skip = randomMatrixPaths(*op, spec, options, noFeedback());
  ASSERT_EQ(plain.size(), 4u);
  for (size_t t = 1; t < plain.size(); ++t) EXPECT_LT(plain[t].box.median, plain[t - 1].box.median);
  EXPECT_EQ(skip[0].values, plain[0].values);  // ⌊1/2⌋ = 0 identities: the same draws
  EXPECT_GT(skip[3].box.median, plain[3].box.median);
}

}  // namespace
}  // namespace tl::rankdecay
