// core/model/swap_evaluation: `tlens eval`'s numbers on the committed ViT fixtures and a generated
// stand-in for Fashion-MNIST: swapping a model's own normaliser back in changes nothing, another one moves
// only the layers from the swap on, progress says "image i/N", and cancelling stops it.
#include "model/swap_evaluation.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "common/errors.h"
#include "support/test_util.h"
#include "support/two_class_fashion_mnist.h"

namespace tl {
namespace {

using test::kVitFixtures;
using test::throwsWith;

class SwapEvaluationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    test::writeTwoClassFashionMnist(dir.file(""), 16, 12);
    ::setenv("TL_FASHION_MNIST_DIR", dir.path().c_str(), 1);
  }
  void TearDown() override { ::unsetenv("TL_FASHION_MNIST_DIR"); }

  test::TempDir dir;
};

SwapEvaluationOptions swapOptions(const std::string& swap, std::vector<int> layers, int limit) {
  SwapEvaluationOptions o;
  o.swap = OperatorRegistry::builtin().parse(swap);
  o.layers = std::move(layers);
  o.limit = limit;
  return o;
}

TEST_F(SwapEvaluationTest, TheModelsOwnNormaliserSwappedBackInChangesNothing) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_sinkhorn_T4");  // sinkhorn:T=4,eps=0.5
  const SwapEvaluation r = evaluateSwap(runner, swapOptions("sinkhorn:T=4,eps=0.5", {}, 10));
  EXPECT_EQ(r.images, 10);
  EXPECT_EQ(r.op, runner.config().attention.toString());
  EXPECT_EQ(r.swappedLayers, (std::vector<int>{0, 1}));
  EXPECT_EQ(r.agreeing, 10);
  EXPECT_EQ(r.swappedCorrect, r.correct);
  EXPECT_EQ(r.agreement(), 1.0);
  ASSERT_EQ(r.layers.size(), 2u);
  for (const LayerShift& shift : r.layers) {
    EXPECT_TRUE(shift.swapped);
    EXPECT_LT(shift.outputRmse, 1e-5);  // float32 model vs double core operator
    EXPECT_LT(shift.attentionDistance, 1e-5);
  }
  EXPECT_GT(r.seconds, 0.0);
}

TEST_F(SwapEvaluationTest, AnotherOperatorMovesOnlyTheLayersFromTheSwapOn) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_softmax");
  const SwapEvaluation r = evaluateSwap(runner, swapOptions("sinkhorn:T=20,eps=1", {1}, 6));
  ASSERT_EQ(r.layers.size(), 2u);
  EXPECT_EQ(r.layers[0].layer, 0);
  EXPECT_FALSE(r.layers[0].swapped);
  EXPECT_EQ(r.layers[0].outputRmse, 0.0);
  EXPECT_EQ(r.layers[0].attentionDistance, 0.0);
  EXPECT_TRUE(r.layers[1].swapped);
  EXPECT_GT(r.layers[1].attentionDistance, 1e-3);
  EXPECT_GT(r.layers[1].outputRmse, 0.0);
  EXPECT_EQ(r.swappedLayers, (std::vector<int>{1}));
}

TEST_F(SwapEvaluationTest, WithoutASwapOnlyTheModelsOwnAccuracyIsMeasured) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_softmax");
  SwapEvaluationOptions o;
  o.limit = 100;  // more than the split holds: the whole split
  const SwapEvaluation r = evaluateSwap(runner, o);
  EXPECT_EQ(r.images, 12);
  EXPECT_FALSE(r.swap);
  EXPECT_TRUE(r.layers.empty());
  EXPECT_TRUE(r.swappedLayers.empty());
  EXPECT_GE(r.correct, 0);
  EXPECT_LE(r.correct, 12);
}

TEST_F(SwapEvaluationTest, ReportsEveryImageAndStopsWhenCanceled) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_softmax");
  std::vector<std::pair<double, std::string>> seen;
  Feedback feedback([&](double fraction, const std::string& stage) { seen.emplace_back(fraction, stage); });
  evaluateSwap(runner, swapOptions("sinkhorn:T=3", {0}, 4), feedback);
  ASSERT_EQ(seen.size(), 4u);  // the model runs' per-layer progress stays inside "image i/N"
  EXPECT_EQ(seen.front().second, "image 1/4");
  EXPECT_EQ(seen.back(), (std::pair<double, std::string>{1.0, "image 4/4"}));

  int reports = 0;
  Feedback stopAfterTwo([&](double, const std::string&) {
    if (++reports == 2) stopAfterTwo.cancel();  // as Ctrl-C would, while image 3 is next
  });
  EXPECT_TRUE(throwsWith<Canceled>([&] { evaluateSwap(runner, swapOptions("sinkhorn:T=3", {0}, 10), stopAfterTwo); }));
  EXPECT_EQ(reports, 2);
}

TEST_F(SwapEvaluationTest, RefusesLayersTheModelDoesNotHave) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_softmax");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { evaluateSwap(runner, swapOptions("sinkhorn", {2}, 1)); },
                                          {"layer 2", "0..1"}));
}

}  // namespace
}  // namespace tl
