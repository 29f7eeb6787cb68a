// core/model/rank_decay_checkpoint: a checkpoint's attention and block outputs under the four
// configurations, on the committed ViT fixtures and a generated stand-in for Fashion-MNIST.
#include "model/rank_decay_checkpoint.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/errors.h"
#include "model/vit_inference.h"
#include "support/test_util.h"
#include "support/two_class_fashion_mnist.h"
#include "vit/model_image.h"

namespace tl {
namespace {

using rankdecay::BlockConfig;

const std::string kCheckpoint = std::string(TL_FIXTURE_DIR) + "/vit/hf_softmax";

class RankDecayCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::writeTwoClassFashionMnist(dir.file(""), 16, 12);
    ::setenv("TL_FASHION_MNIST_DIR", dir.path().c_str(), 1);
  }
  void TearDown() override { ::unsetenv("TL_FASHION_MNIST_DIR"); }

  static rankdecay::AttentionRecord record(BlockConfig config, const OperatorSpec* op = nullptr) {
    const auto source = rankdecay::parseRankDecaySource("model:checkpoint=" + kCheckpoint +
                                                        ",images=fashion-mnist:test:2-4");
    return recordCheckpoint(source, op, config, rankdecay::SkipScope::All, noFeedback());
  }

  test::TempDir dir;
};

TEST_F(RankDecayCheckpointTest, TheTransformerConfigurationIsTheModelsOwnForwardPass) {
  const rankdecay::AttentionRecord r = record(BlockConfig::Transformer);
  ASSERT_EQ(r.samples, 3);
  const VitRunner runner = VitRunner::open(kCheckpoint);
  ASSERT_EQ(r.layers, runner.config().numLayers);
  ASSERT_EQ(r.heads, runner.config().numHeads);
  for (int b = 0; b < 3; ++b) {
    const ModelImage image = loadModelImage(ImageSource::parse("fashion-mnist:test:" + std::to_string(2 + b)),
                                            runner.config());
    const VitTrace trace = runner.run(image.pixels);
    ASSERT_EQ(r.outputs[size_t(b)].size(), size_t(r.layers + 1));
    for (int l = 0; l < r.layers; ++l) {
      EXPECT_TRUE(test::matricesNear(r.outputs[size_t(b)][size_t(l + 1)], trace.layers[size_t(l)].output, 1e-5));
      for (int h = 0; h < r.heads; ++h)
        EXPECT_TRUE(test::matricesNear(r.at(l, b, h), trace.layers[size_t(l)].heads[size_t(h)].attention, 1e-6));
    }
  }
}

TEST_F(RankDecayCheckpointTest, ConfigurationsChangeOnlyWhatFollowsTheFirstBlock) {
  const rankdecay::AttentionRecord full = record(BlockConfig::Transformer), san = record(BlockConfig::San),
                                   skip = record(BlockConfig::SanSkip);
  EXPECT_EQ(san.outputs[0][0], full.outputs[0][0]);  // the embeddings
  EXPECT_EQ(san.at(0, 0, 0), full.at(0, 0, 0));      // block 1 sees the same input
  EXPECT_FALSE(test::matricesNear(san.outputs[0][1], full.outputs[0][1], 1e-3));
  EXPECT_FALSE(test::matricesNear(skip.outputs[0][1], full.outputs[0][1], 1e-3));
  // SAN + skip: X1 = X + Att(X), so X1 − X is the same attention output as pure SAN's X1.
  EXPECT_TRUE(test::matricesNear(MatD(skip.outputs[0][1] - skip.outputs[0][0]), san.outputs[0][1], 1e-5));
}

TEST_F(RankDecayCheckpointTest, ACoreOperatorSwappedIntoEveryLayerReportsItsMarginalErrors) {
  const OperatorSpec sinkhorn = OperatorRegistry::builtin().parse("sinkhorn:T=2");
  const rankdecay::AttentionRecord r = record(BlockConfig::San, &sinkhorn);
  for (size_t i = 0; i < r.attention.size(); ++i) {
    EXPECT_LE(r.errors[i].colMax, 1e-12);  // T = 2 ends on columns
    EXPECT_NEAR((r.attention[i].colwise().sum().array() - 1).abs().maxCoeff(), r.errors[i].colMax, 1e-6);
  }
}

TEST_F(RankDecayCheckpointTest, ImageRangesAreCheckedWithAClearMessage) {
  EXPECT_EQ(parseFashionMnistRange("fashion-mnist:train:5").last, 5);
  EXPECT_EQ(parseFashionMnistRange("fashion-mnist:test:0-99").last, 99);
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { parseFashionMnistRange("mnist:test:0-9"); }, {"fashion-mnist:test:0-99"}));
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { parseFashionMnistRange("fashion-mnist:test:9-3"); }, {"ends before"}));
  const auto beyond = rankdecay::parseRankDecaySource("model:checkpoint=" + kCheckpoint + ",images=fashion-mnist:test:0-50");
  EXPECT_THROW(recordCheckpoint(beyond, nullptr, BlockConfig::San, rankdecay::SkipScope::All, noFeedback()),
               InvalidArgument);
}

}  // namespace
}  // namespace tl
