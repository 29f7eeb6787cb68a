// End-to-end `tlens train`: flag errors are usage errors (exit 2) in every build; with LibTorch a tiny run on
// a generated two-class stand-in for Fashion-MNIST writes its checkpoint, one progress line per epoch when
// stderr is not a terminal, and --json; without LibTorch the command says it cannot train (exit 1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "support/two_class_fashion_mnist.h"

namespace tl::testing {
namespace {

constexpr int kUsage = 2;
constexpr int kFailure = 1;

class TlensTrain : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = scratchDir("fashion");
    test::writeTwoClassFashionMnist(data_);
    out_ = scratchDir("train") + "/run";
  }

  CliRun train(std::vector<std::string> extra) const {
    std::vector<std::string> args = {"train", "--dim", "16", "--depth", "1", "--heads", "2", "--mlp", "32",
                                     "--patch", "7", "--batch", "32", "--threads", "1", "--out", out_};
    args.insert(args.end(), extra.begin(), extra.end());
    return runTlens(args, "TL_FASHION_MNIST_DIR=" + data_);
  }

  std::string data_, out_;
};

TEST_F(TlensTrain, AnUnknownAttentionIsAUsageErrorNamingIt) {
  EXPECT_TRUE(failsWithOneErrorLine(train({"--attention", "sinkorn:T=5"}), kUsage, {"sinkorn"}));
  EXPECT_TRUE(failsWithOneErrorLine(train({"--attention", "sinkhorn:T=0"}), kUsage, {"T"}));
  EXPECT_TRUE(failsWithOneErrorLine(train({"--attention", "sinkhorn:Q=3"}), kUsage, {"Q"}));
}

TEST_F(TlensTrain, BadNumbersAreUsageErrors) {
  EXPECT_TRUE(failsWithOneErrorLine(train({"--lr", "fast"}), kUsage, {"--lr", "fast"}));
  EXPECT_TRUE(failsWithOneErrorLine(train({"--epochs", "0"}), kUsage, {"--epochs"}));
  EXPECT_TRUE(failsWithOneErrorLine(train({"--seed", "-1"}), kUsage, {"--seed"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"train", "--epochs", "1"}), kUsage, {"--out"}));
}

TEST_F(TlensTrain, FineTuningKeepsTheCheckpointsArchitectureAndStartsANewRun) {
  EXPECT_TRUE(failsWithOneErrorLine(train({"--init", "some/checkpoint"}), kUsage, {"--dim", "--init"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"train", "--init", "some/checkpoint", "--resume", "--out", out_}), kUsage,
                                    {"--init", "--resume"}));
}

#ifdef TL_TEST_TORCH
TEST_F(TlensTrain, AFamilyWithoutATrainableVersionIsAUsageError) {
  EXPECT_TRUE(failsWithOneErrorLine(train({"--attention", "asap"}), kUsage, {"asap", "softmax"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"train", "--patch", "5", "--out", out_}), kUsage, {"patch 5"}));
}

TEST_F(TlensTrain, TrainsWritesTheCheckpointAndTheJsonReport) {
  const std::string json = out_ + ".json";
  const CliRun run = train({"--epochs", "2", "--lr", "1e-2", "--no-augment", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  for (const char* file : {"config.json", "model.safetensors", "training_state/state.json", "training_state/optimizer.pt"})
    EXPECT_TRUE(fileExists(out_ + "/" + file)) << file;
  // Not a terminal: one line per epoch and nothing redrawn.
  EXPECT_EQ(lineCount(run.err), 2) << run.err;
  EXPECT_NE(run.err.find("epoch 2/2"), std::string::npos) << run.err;
  EXPECT_EQ(run.err.find('\r'), std::string::npos);
  EXPECT_NE(run.out.find("test accuracy"), std::string::npos) << run.out;

  const auto report = nlohmann::json::parse(readText(json));
  ASSERT_EQ(report.at("epochs").size(), 2u);
  EXPECT_GT(report.at("parameters").get<int>(), 0);
  for (const auto& epoch : report.at("epochs"))
    for (const char* key : {"train_loss", "train_accuracy", "test_accuracy", "seconds"}) EXPECT_TRUE(epoch.contains(key));
  EXPECT_GE(report.at("final_test_accuracy").get<double>(), 0.9);

  const CliRun again = runTlens({"train", "--out", out_, "--resume"}, "TL_FASHION_MNIST_DIR=" + data_);
  EXPECT_EQ(again.status, 0) << again.err;
  EXPECT_NE(again.out.find("nothing to do"), std::string::npos) << again.out;
  EXPECT_TRUE(failsWithOneErrorLine(train({"--epochs", "2"}), kUsage, {"already holds", "--resume"}));
  EXPECT_TRUE(failsWithOneErrorLine(runTlens({"train", "--out", out_, "--resume", "--epochs", "3"},
                                             "TL_FASHION_MNIST_DIR=" + data_),
                                    kUsage, {"epochs"}));
}

TEST_F(TlensTrain, MissingDataIsAFileErrorSayingWhatToInstall) {
  const CliRun run = runTlens({"train", "--out", out_}, "TL_FASHION_MNIST_DIR=" + out_ + "-nothing");
  EXPECT_TRUE(failsWithOneErrorLine(run, kFailure, {"dataset-fashion-mnist"}));
}
#else
TEST_F(TlensTrain, WithoutLibTorchItSaysItCannotTrain) {
  EXPECT_TRUE(failsWithOneErrorLine(train({}), kFailure, {"LibTorch"}));
}
#endif

}  // namespace
}  // namespace tl::testing
