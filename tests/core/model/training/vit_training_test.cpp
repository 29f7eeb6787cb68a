// Training a ViT end to end on a tiny two-class stand-in for Fashion-MNIST (two_class_fashion_mnist.h):
// the loss falls, checkpoints reload to identical logits, a seed fixes the weights, a run stopped
// mid-epoch and resumed ends bit-for-bit where an uninterrupted run ends, and fine-tuning starts from a
// checkpoint's weights with its architecture.
#include "model/training/training_run.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <numeric>

#include "model/training/vit_evaluation.h"
#include "model/training/vit_training.h"
#include "support/test_util.h"
#include "support/two_class_fashion_mnist.h"

namespace tl {
namespace {

using test::throwsWith;

class VitTraining : public ::testing::Test {
 protected:
  void SetUp() override {
    test::writeTwoClassFashionMnist(dir.file(""));
    ::setenv("TL_FASHION_MNIST_DIR", dir.path().c_str(), 1);
  }
  void TearDown() override { ::unsetenv("TL_FASHION_MNIST_DIR"); }

  // One block, 16 patches of 7×7, 8 steps of 32 images per epoch: a few seconds for a whole test. Without
  // augmentation the two classes separate within the first epoch; the determinism tests turn it on, so the
  // seeded crops and flips are covered too.
  TrainingOptions tiny(const std::string& name, const std::string& attention = "softmax") const {
    TrainingOptions o;
    o.attention = attention;
    o.dim = 16;
    o.depth = 1;
    o.heads = 2;
    o.mlp = 32;
    o.patch = 7;
    o.epochs = 3;
    o.batch = 32;
    o.lr = 1e-2;
    o.threads = 1;
    o.seed = 7;
    o.augment = false;
    o.out = dir.file(name);
    return o;
  }

  test::TempDir dir;
};

TensorMap weights(const std::string& out) { return readVitCheckpoint(out).tensors; }

[[nodiscard]] ::testing::AssertionResult identical(const TensorMap& a, const TensorMap& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " tensors";
  for (const auto& [name, t] : a) {
    const auto it = b.find(name);
    if (it == b.end()) return ::testing::AssertionFailure() << name << " missing";
    if (t.shape != it->second.shape || t.values != it->second.values)
      return ::testing::AssertionFailure() << name << " differs";
  }
  return ::testing::AssertionSuccess();
}

double mean(const std::vector<double>& v, size_t from, size_t count) {
  return std::accumulate(v.begin() + long(from), v.begin() + long(from + count), 0.0) / double(count);
}

TEST_F(VitTraining, LossFallsAndTheTwoClassesAreLearned) {
  std::vector<double> losses;
  TrainingListener listener;
  listener.onStep = [&](const TrainingProgress& p) { losses.push_back(p.stepLoss); };
  const TrainingReport report = trainVitOnFashionMnist(tiny("run"), listener);
  ASSERT_EQ(losses.size(), 24u);  // 3 epochs × 256/32 steps
  EXPECT_LT(mean(losses, 4, 4), 0.7 * mean(losses, 0, 4));
  EXPECT_LT(mean(losses, 20, 4), 0.2 * mean(losses, 0, 4));
  ASSERT_EQ(report.history.size(), 3u);
  EXPECT_LT(report.history.back().trainLoss, report.history.front().trainLoss);
  EXPECT_GE(report.history.back().testAccuracy, 0.95);
  EXPECT_FALSE(report.stopped);
  EXPECT_EQ(report.trainImages, 256);
  EXPECT_EQ(report.testImages, 64);
  EXPECT_GT(report.parameters, 0);
}

TEST_F(VitTraining, EveryTrainableFamilyReloadsFromItsCheckpointToIdenticalLogits) {
  for (const std::string attention : {"softmax", "sinkhorn:T=5,eps=1", "esp", "lot:r=4"}) {
    SCOPED_TRACE(attention);
    TrainingOptions o = tiny(attention.substr(0, 3), attention);
    o.epochs = 1;
    const TrainingReport report = trainVitOnFashionMnist(o);
    ASSERT_EQ(report.history.size(), 1u);
    EXPECT_TRUE(std::isfinite(report.history[0].trainLoss));

    // The reloaded model predicts the reported test accuracy exactly...
    const VitCheckpoint checkpoint = readVitCheckpoint(o.out);
    EXPECT_EQ(checkpoint.config.attention.toString(), report.attention);
    EXPECT_EQ(evaluateOnFashionMnist(checkpoint, {0, 500, 1}).accuracy, report.history[0].testAccuracy);
    // ...and gives bit-identical logits to a second reload (nothing random at inference).
    VitModel a = makeVitModel(checkpoint, o.out), b = makeVitModel(readVitCheckpoint(o.out), o.out);
    const FashionMnistSplit test = loadFashionMnist(FashionMnistPart::Test);
    const torch::Tensor pixels = batchPixels(checkpoint.config, test, {0, 1, 2, 3}, nullptr);
    torch::NoGradGuard noGrad;
    EXPECT_TRUE(torch::equal(a->forward(pixels), b->forward(pixels)));
  }
}

TEST_F(VitTraining, AModelTrainedAFewStepsSavesAndReloadsToIdenticalLogits) {
  VitConfig config;
  config.hiddenSize = 16;
  config.numLayers = 1;
  config.numHeads = 2;
  config.headDim = 8;
  config.intermediateSize = 32;
  config.imageSize = 28;
  config.patchSize = 7;
  config.numChannels = 1;
  config.labels = defaultVitLabels(10);
  config.attention = OperatorRegistry::builtin().parse("lot:r=4");  // learned pivots travel too
  torch::manual_seed(3);
  VitTrainer trainer(VitModel(config), 0.05, 0.1);
  const FashionMnistSplit train = loadFashionMnist(FashionMnistPart::Train);
  std::vector<int64_t> indices(32);
  std::iota(indices.begin(), indices.end(), 0);
  SeededRandom random(1);
  for (int s = 0; s < 3; ++s)
    trainer.step(batchPixels(config, train, indices, &random), batchLabels(train, indices), 1e-3);
  writeVitCheckpoint(dir.file("saved"), checkpointOf(trainer.model()));

  VitModel reloaded = makeVitModel(readVitCheckpoint(dir.file("saved")), "saved");
  trainer.model()->eval();
  torch::NoGradGuard noGrad;
  const torch::Tensor pixels = batchPixels(config, train, indices, nullptr);
  EXPECT_TRUE(torch::equal(trainer.model()->forward(pixels), reloaded->forward(pixels)));
}

// 785 tokens (patch 1) make each image's [H, n, n] attention ~5 MB, so a batch of 6 runs as chunks: the
// step still reports, and descends on, the whole batch's mean loss.
TEST_F(VitTraining, ABatchSplitIntoChunksReportsTheWholeBatchLoss) {
  VitConfig config;
  config.hiddenSize = 8;
  config.numLayers = 1;
  config.numHeads = 2;
  config.headDim = 4;
  config.intermediateSize = 8;
  config.imageSize = 28;
  config.patchSize = 1;
  config.numChannels = 1;
  config.labels = defaultVitLabels(10);
  config.attention = OperatorRegistry::builtin().parse("softmax");
  torch::manual_seed(4);
  VitTrainer trainer(VitModel(config), 0.05, 0.1);
  const FashionMnistSplit train = loadFashionMnist(FashionMnistPart::Train);
  const std::vector<int64_t> indices = {0, 1, 2, 3, 4, 5};
  const torch::Tensor pixels = batchPixels(config, train, indices, nullptr), labels = batchLabels(train, indices);
  double whole = 0;
  int64_t correct = 0;
  {
    torch::NoGradGuard noGrad;
    const torch::Tensor logits = trainer.model()->forward(pixels);
    whole = torch::nn::functional::cross_entropy(
                logits, labels, torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(0.1))
                .item<double>();
    correct = logits.argmax(1).eq(labels).sum().item<int64_t>();
  }
  const StepResult step = trainer.step(pixels, labels, 1e-3);
  EXPECT_NEAR(step.loss, whole, 1e-6);
  EXPECT_EQ(step.correct, correct);
}

TEST_F(VitTraining, TheSameSeedGivesIdenticalWeightsAndAnotherSeedDoesNot) {
  TrainingOptions a = tiny("a"), b = tiny("b"), c = tiny("c");
  a.epochs = b.epochs = c.epochs = 2;
  a.augment = b.augment = c.augment = true;
  c.seed = 8;
  const TrainingReport ra = trainVitOnFashionMnist(a), rb = trainVitOnFashionMnist(b);
  trainVitOnFashionMnist(c);
  EXPECT_TRUE(identical(weights(a.out), weights(b.out)));
  EXPECT_FALSE(identical(weights(a.out), weights(c.out)));
  EXPECT_EQ(ra.history.back().trainLoss, rb.history.back().trainLoss);
}

TEST_F(VitTraining, AStoppedRunResumedEndsExactlyWhereAnUninterruptedRunEnds) {
  for (const std::string attention : {"softmax", "esp"}) {
    SCOPED_TRACE(attention);
    TrainingOptions whole = tiny(attention + "-whole", attention);
    whole.augment = true;
    const TrainingReport uninterrupted = trainVitOnFashionMnist(whole);

    // Stop in the middle of epoch 2, as Ctrl-C does: the flag is checked before the next step.
    TrainingOptions o = tiny(attention + "-stopped", attention);
    o.augment = true;
    Feedback feedback;
    TrainingListener listener;
    listener.onStep = [&](const TrainingProgress& p) {
      if (p.epoch == 2 && p.step == 3) feedback.cancel();
    };
    const TrainingReport stopped = trainVitOnFashionMnist(o, listener, feedback);
    EXPECT_TRUE(stopped.stopped);
    EXPECT_EQ(stopped.stoppedInEpoch, 2);
    EXPECT_EQ(stopped.stoppedAtStep, 3);
    ASSERT_EQ(stopped.history.size(), 1u);
    EXPECT_EQ(storedTrainingOptions(o.out).epochs, 3);

    const TrainingOptions resumed = storedTrainingOptions(o.out);
    EXPECT_TRUE(resumed.resume);
    const TrainingReport finished = trainVitOnFashionMnist(resumed);
    EXPECT_FALSE(finished.stopped);
    ASSERT_EQ(finished.history.size(), 3u);
    EXPECT_TRUE(identical(weights(whole.out), weights(o.out)));
    for (size_t e = 0; e < 3; ++e) {
      EXPECT_EQ(finished.history[e].trainLoss, uninterrupted.history[e].trainLoss) << "epoch " << e + 1;
      EXPECT_EQ(finished.history[e].testAccuracy, uninterrupted.history[e].testAccuracy) << "epoch " << e + 1;
    }
  }
}

TEST_F(VitTraining, EspAnnealsItsSortTemperatureEveryEpoch) {
  TrainingOptions o = tiny("esp", "esp:sort_temp=0.01");
  o.sortAnneal = 0.5;
  const TrainingReport report = trainVitOnFashionMnist(o);
  ASSERT_EQ(report.history.size(), 3u);
  EXPECT_DOUBLE_EQ(report.history[0].sortTemp, 0.01);
  EXPECT_DOUBLE_EQ(report.history[1].sortTemp, 0.005);
  EXPECT_DOUBLE_EQ(report.history[2].sortTemp, 0.0025);
  // The checkpoint keeps the spec's own temperature; evaluation sorts hard.
  EXPECT_EQ(getReal(readVitCheckpoint(o.out).config.attention.params, "sort_temp"), 0.01);
}

TEST_F(VitTraining, ResumingRefusesChangedOptionsAndNewRunsRefuseAnExistingModel) {
  TrainingOptions o = tiny("run");
  o.epochs = 1;
  trainVitOnFashionMnist(o);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { trainVitOnFashionMnist(o); }, {"already holds", "--resume"}));
  TrainingOptions changed = storedTrainingOptions(o.out);
  changed.lr *= 2;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { trainVitOnFashionMnist(changed); }, {"lr"}));
  // All epochs done: resuming trains nothing and reports the stored history.
  const TrainingReport again = trainVitOnFashionMnist(storedTrainingOptions(o.out));
  EXPECT_EQ(again.history.size(), 1u);
}

TEST_F(VitTraining, ResumingRefusesFilesFromDifferentEpochs) {
  TrainingOptions o = tiny("run");
  o.epochs = 1;
  trainVitOnFashionMnist(o);
  const std::string optimizer = o.out + "/training_state/optimizer.pt";
  test::writeBytes(optimizer, test::readBytes(optimizer) + "x");
  EXPECT_TRUE(throwsWith<FileError>([&] { storedTrainingOptions(o.out); }, {"interrupted"}));
  TrainingOptions missing = tiny("nothing-here");
  missing.resume = true;
  EXPECT_TRUE(throwsWith<FileError>([&] { trainVitOnFashionMnist(missing); }, {"no training state"}));
}

TEST_F(VitTraining, FineTuningStartsFromTheCheckpointWithItsArchitecture) {
  TrainingOptions base = tiny("base");
  base.epochs = 1;
  trainVitOnFashionMnist(base);

  // LOT in place of softmax, with other architecture options: the checkpoint's architecture wins, its weights
  // are the start and LOT's own parameters start fresh. A learning rate of ~0 keeps the start visible.
  TrainingOptions ft = tiny("ft", "lot:r=4");
  ft.dim = 64;
  ft.depth = 2;
  ft.heads = 4;
  ft.mlp = 128;
  ft.patch = 4;
  ft.init = base.out;
  ft.epochs = 1;
  ft.lr = 1e-12;
  ft.weightDecay = 0;
  const TrainingReport report = trainVitOnFashionMnist(ft);
  EXPECT_EQ(report.options.dim, 16);
  EXPECT_EQ(report.options.depth, 1);
  EXPECT_EQ(report.options.heads, 2);
  EXPECT_EQ(report.options.mlp, 32);
  EXPECT_EQ(report.options.patch, 7);
  const TensorMap start = weights(base.out), tuned = weights(ft.out);
  std::vector<std::string> fresh;
  for (const auto& [name, t] : tuned) {
    const auto it = start.find(name);
    if (it == start.end()) {
      fresh.push_back(name);
      continue;
    }
    ASSERT_EQ(t.shape, it->second.shape) << name;
    for (size_t i = 0; i < t.values.size(); ++i) ASSERT_NEAR(t.values[i], it->second.values[i], 1e-6) << name;
  }
  EXPECT_EQ(tuned.size(), start.size() + fresh.size());  // nothing of the start was dropped
  ASSERT_EQ(fresh.size(), 2u) << "one layer's LOT pivots and mass logits";
  for (const auto& name : fresh)
    EXPECT_TRUE(name.find("pivots") != std::string::npos || name.find("mass_logits") != std::string::npos) << name;
  EXPECT_EQ(readVitCheckpoint(ft.out).config.attention.family, "lot");
  // The stored run remembers its start, so --resume continues the same fine-tuning.
  EXPECT_EQ(storedTrainingOptions(ft.out).init, base.out);
}

TEST_F(VitTraining, FineTuningRefusesCheckpointsOfOtherImagesAndMissingOnes) {
  TrainingOptions o = tiny("ft");
  o.init = std::string(TL_FIXTURE_DIR) + "/vit/hf_softmax";  // 8×8 colour images
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { trainVitOnFashionMnist(o); }, {"hf_softmax", "28×28 greyscale"}));
  o.init = dir.file("no-such-checkpoint");
  EXPECT_TRUE(throwsWith<FileError>([&] { trainVitOnFashionMnist(o); }, {"no-such-checkpoint"}));
  EXPECT_FALSE(std::filesystem::exists(o.out));
}

TEST_F(VitTraining, BadOptionsAreUsageErrors) {
  TrainingOptions o = tiny("run");
  o.patch = 5;
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { trainVitOnFashionMnist(o); }, {"patch 5"}));
  o = tiny("run", "asap");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { trainVitOnFashionMnist(o); }, {"asap", "softmax"}));
  o = tiny("run", "sinkhorn:T=0");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { trainVitOnFashionMnist(o); }, {"T"}));
  EXPECT_FALSE(std::filesystem::exists(dir.file("run")));
}

}  // namespace
}  // namespace tl
