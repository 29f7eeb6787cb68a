// End-to-end `tlens extract` and `tlens eval` on the small committed ViT fixtures (tests/fixtures/vit, made
// by scripts/reference/make_vit_fixtures.py) and a generated stand-in for Fashion-MNIST: the files extract
// writes are what its index names and reproduce `tlens plan`; eval's plug-and-play numbers behave as they
// must (swapping a model's own normaliser back in changes nothing; another one moves only the layers from
// the swap on); bad input gives the documented exit codes; `tlens bench --training` reports what it timed.
// Without LibTorch these commands refuse (exit 1).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli_runner.h"
#include "io/npy.h"
#include "support/two_class_fashion_mnist.h"

namespace tl::testing {
namespace {

constexpr int kUsage = 2;
constexpr int kFailure = 1;
const std::string kSoftmaxVit = std::string(TL_FIXTURE_DIR) + "/vit/hf_softmax";
const std::string kSinkhornVit = std::string(TL_FIXTURE_DIR) + "/vit/hf_sinkhorn_T4";  // sinkhorn:T=4,eps=0.5

class TlensModel : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = scratchDir("fashion");
    test::writeTwoClassFashionMnist(data_);
  }
  CliRun tlens(const std::vector<std::string>& args) const { return runTlens(args, "TL_FASHION_MNIST_DIR=" + data_); }

  std::string data_;
};

#ifdef TL_TEST_TORCH
TEST_F(TlensModel, ExtractWritesEveryHeadAndAnIndexNamingThem) {
  const std::string out = scratchDir("extract");
  const CliRun run = tlens({"extract", kSoftmaxVit, "--dataset", "fashion-mnist", "--index", "3", "--out", out});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto index = nlohmann::json::parse(readText(out + "/index.json"));
  EXPECT_EQ(index.at("tokens").get<int>(), 5);  // image 8, patch 4: 4 patches + [CLS]
  EXPECT_EQ(index.at("patch_grid"), nlohmann::json::array({2, 2}));
  ASSERT_EQ(index.at("layers").size(), 2u);
  for (const auto& layer : index.at("layers")) {
    ASSERT_EQ(layer.at("heads").size(), 2u);
    for (const auto& head : layer.at("heads"))
      for (const char* what : {"q", "k", "v", "attention"}) EXPECT_TRUE(fileExists(out + "/" + head.at(what).get<std::string>()));
    EXPECT_TRUE(fileExists(out + "/" + layer.at("output").get<std::string>()));
  }
  EXPECT_TRUE(fileExists(out + "/L01_H1_q.npy"));  // the documented naming
  const MatD logits = readNpyMatrix<double>(out + "/logits.npy");  // a vector: one of its sizes is 1
  Eigen::Index row, col;
  logits.maxCoeff(&row, &col);
  EXPECT_EQ(index.at("predicted").get<int>(), int(std::max(row, col)));

  // The model's own attention is softmax(QKᵀ/√d) of the extracted Q and K: `tlens plan` reproduces it
  // (float32 model, so to float32 accuracy).
  const std::string plan = scratchDir("plan");
  ASSERT_EQ(tlens({"plan", "--q", out + "/L01_H0_q.npy", "--k", out + "/L01_H0_k.npy", "--op", "softmax", "--out", plan}).status, 0);
  const MatD own = readNpyMatrix<double>(out + "/L01_H0_attention.npy");
  EXPECT_LT((readNpyMatrix<double>(plan + "/plan.npy") - own).cwiseAbs().maxCoeff(), 1e-6);
}

// `tlens certify` on a model source (a checkpoint's layer and head) certifies that head's scores: the same
// blocks and numbers as on the Q and K `tlens extract` writes for it.
TEST_F(TlensModel, CertifyTakesAModelSourceLikeItsExtractedHead) {
  const std::string out = scratchDir("extract-certify");
  ASSERT_EQ(tlens({"extract", kSoftmaxVit, "--dataset", "fashion-mnist", "--index", "3", "--out", out}).status, 0);
  const std::string op = "banded:W=2,base_steps=15,tail_steps=2,eps=0.5";
  const CliRun fromModel = tlens({"certify", "--source",
                                  "model:checkpoint=" + kSoftmaxVit + ",image=fashion-mnist:test:3,layer=1,head=0",
                                  "--op", op, "--tile", "2", "--json", out + "/model.json"});
  ASSERT_EQ(fromModel.status, 0) << fromModel.err;
  const CliRun fromFiles = tlens({"certify", "--q", out + "/L01_H0_q.npy", "--k", out + "/L01_H0_k.npy", "--op", op,
                                  "--tile", "2", "--json", out + "/files.json"});
  ASSERT_EQ(fromFiles.status, 0) << fromFiles.err;
  const auto a = nlohmann::json::parse(readText(out + "/model.json"));
  const auto b = nlohmann::json::parse(readText(out + "/files.json"));
  EXPECT_EQ(a["n_q"], 5);
  ASSERT_EQ(a["tiles"].size(), b["tiles"].size());
  ASSERT_GT(a["tiles"].size(), 0u);
  for (size_t t = 0; t < a["tiles"].size(); ++t)
    EXPECT_NEAR(a["tiles"][t]["delta"].get<double>(), b["tiles"][t]["delta"].get<double>(), 1e-5) << t;
}

nlohmann::json evalReport(const CliRun& run, const std::string& json) {
  EXPECT_EQ(run.status, 0) << run.err;
  return nlohmann::json::parse(readText(json));
}

TEST_F(TlensModel, SwappingTheModelsOwnNormaliserBackInChangesNothing) {
  const std::string json = scratchDir("eval") + "/report.json";
  const auto report = evalReport(tlens({"eval", kSinkhornVit, "--limit", "40", "--swap", "sinkhorn:T=4,eps=0.5",
                                        "--json", json}), json);
  EXPECT_EQ(report.at("images").get<int>(), 40);
  EXPECT_DOUBLE_EQ(report.at("agreement").get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(report.at("swapped_accuracy").get<double>(), report.at("accuracy").get<double>());
  for (const auto& layer : report.at("layers")) {
    EXPECT_LT(layer.at("output_rmse").get<double>(), 1e-5);  // float32 model vs double core operator
    EXPECT_LT(layer.at("attention_distance").get<double>(), 1e-5);
  }
}

TEST_F(TlensModel, AnotherOperatorMovesOnlyTheLayersFromTheSwapOn) {
  const std::string json = scratchDir("eval") + "/report.json";
  const auto report = evalReport(tlens({"eval", kSoftmaxVit, "--limit", "30", "--swap", "sinkhorn:T=20,eps=1",
                                        "--layers", "1", "--json", json}), json);
  const auto& layers = report.at("layers");
  ASSERT_EQ(layers.size(), 2u);
  EXPECT_FALSE(layers[0].at("swapped").get<bool>());
  EXPECT_EQ(layers[0].at("output_rmse").get<double>(), 0.0);
  EXPECT_EQ(layers[0].at("attention_distance").get<double>(), 0.0);
  EXPECT_TRUE(layers[1].at("swapped").get<bool>());
  EXPECT_GT(layers[1].at("attention_distance").get<double>(), 1e-3);
  EXPECT_GT(layers[1].at("output_rmse").get<double>(), 0.0);
  EXPECT_EQ(report.at("swapped_layers"), nlohmann::json::array({1}));
}

TEST_F(TlensModel, BadInputGivesTheDocumentedExitCodes) {
  const std::string out = scratchDir("bad");
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"extract", kSoftmaxVit, "--out", out}), kUsage, {"--image", "--dataset"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"extract", kSoftmaxVit, "--dataset", "fashion-mnist", "--index", "99999",
                                           "--out", out}), kUsage, {"99999"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"extract", kSoftmaxVit, "--image", out + "/missing.png", "--out", out}),
                                    kFailure, {"missing.png"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"extract", out + "/no-such-checkpoint", "--dataset", "fashion-mnist",
                                           "--index", "0", "--out", out}), kFailure, {"no-such-checkpoint"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"eval", kSoftmaxVit, "--swap", "sinkhorn", "--layers", "7"}), kUsage,
                                    {"--layers", "7"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"eval", kSoftmaxVit, "--swap", "sinkorn"}), kUsage, {"sinkorn"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"eval", kSoftmaxVit, "--layers", "1"}), kUsage, {"--swap"}));
}

// `tlens bench --training` times both paths of every normaliser and size it is given, in the JSON too.
TEST_F(TlensModel, TrainingBenchTimesTheTrainingPathNextToTheDenseGraph) {
  const std::string json = scratchDir("bench-training") + "/steps.json";
  const CliRun run = tlens({"bench", "--training", "--op", "esp", "--op", "lot:r=2", "--n", "6,9", "--d", "4",
                            "--batch", "2", "--heads", "3", "--repeats", "2", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_EQ(report.at("batch").get<int>(), 2);
  EXPECT_EQ(report.at("heads").get<int>(), 3);
  EXPECT_EQ(report.at("d").get<int>(), 4);
  const auto& results = report.at("results");
  ASSERT_EQ(results.size(), 4u);
  const std::vector<std::pair<std::string, int>> expected{{"esp", 6}, {"esp", 9}, {"lot:r=2", 6}, {"lot:r=2", 9}};
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].at("op").get<std::string>(), expected[i].first);
    EXPECT_EQ(results[i].at("n").get<int>(), expected[i].second);
    for (const char* path : {"training_path", "dense_graph"}) {
      const auto seconds = results[i].at(std::string(path) + "_seconds").get<std::vector<double>>();
      ASSERT_EQ(seconds.size(), 2u) << path;
      for (double s : seconds) EXPECT_GT(s, 0.0) << path;
    }
  }
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"bench", "--training", "--op", "asap", "--n", "8"}), kUsage, {"asap"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"bench", "--training", "--lazy", "--op", "esp", "--n", "8"}), kUsage,
                                    {"--lazy"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"bench", "--op", "esp", "--n", "8", "--batch", "2"}), kUsage,
                                    {"--batch", "--training"}));
}

// `tlens bench --load` times opening a checkpoint and one image on both sides; the PyTorch side builds the same
// model (its parameter count is the config's).
TEST_F(TlensModel, LoadBenchTimesOpeningACheckpointNextToPyTorch) {
  const std::string json = scratchDir("bench-load") + "/load.json";
  const CliRun run = tlens({"bench", "--load", kSoftmaxVit, "--repeats", "2", "--json", json});
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_NE(run.out.find("C++/torch"), std::string::npos) << run.out;
  const auto report = nlohmann::json::parse(readText(json));
  EXPECT_EQ(report.at("mode").get<std::string>(), "load");
  EXPECT_EQ(report.at("checkpoint").get<std::string>(), kSoftmaxVit + "/model.safetensors");
  for (const char* timing : {"load_seconds", "forward_seconds", "traced_run_seconds"}) {
    const auto seconds = report.at("cpp").at(timing).get<std::vector<double>>();
    ASSERT_EQ(seconds.size(), 2u) << timing;
    for (double s : seconds) EXPECT_GT(s, 0.0) << timing;
  }
  const auto& reference = report.at("reference");
  ASSERT_TRUE(reference.at("available").get<bool>()) << reference.at("reason").get<std::string>();
  EXPECT_EQ(reference.at("report").at("parameters").get<int64_t>(), report.at("parameters").get<int64_t>());
  EXPECT_EQ(reference.at("report").at("load_seconds").size(), 2u);
  EXPECT_GT(report.at("ratio_cpp_over_reference_load").get<double>(), 0.0);

  EXPECT_TRUE(failsWithOneErrorLine(tlens({"bench", "--load", kSoftmaxVit, "--op", "softmax"}), kUsage, {"--op"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"bench", "--load", scratchDir("bench-load") + "/missing"}), kFailure,
                                    {"missing"}));
}
#else
TEST_F(TlensModel, WithoutLibTorchTheCommandsSaySo) {
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"extract", kSoftmaxVit, "--dataset", "fashion-mnist", "--index", "0",
                                           "--out", scratchDir("x")}), kFailure, {"LibTorch"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"eval", kSoftmaxVit}), kFailure, {"LibTorch"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"bench", "--training", "--op", "esp", "--n", "8"}), kFailure, {"LibTorch"}));
  EXPECT_TRUE(failsWithOneErrorLine(tlens({"bench", "--load", kSoftmaxVit}), kFailure, {"LibTorch"}));
}
#endif

}  // namespace
}  // namespace tl::testing
