// core/model/vit: HF parameter names, autograd through every trainable normaliser, seeded construction,
// batched forward, and the config.json + model.safetensors round trip.
#include "model/vit.h"

#include "io/npy.h"
#include "support/test_util.h"

namespace tl {
namespace {

VitConfig tinyConfig(const std::string& attention) {
  VitConfig c;
  c.hiddenSize = 16;
  c.numLayers = 2;
  c.numHeads = 2;
  c.headDim = 8;
  c.intermediateSize = 24;
  c.imageSize = 8;
  c.patchSize = 4;
  c.numChannels = 3;
  c.labels = defaultVitLabels(4);
  c.attention = OperatorRegistry::builtin().parse(attention);
  return c;
}

torch::Tensor images(int64_t batch, uint64_t seed = 3) {
  torch::manual_seed(seed);
  return torch::randn({batch, 3, 8, 8});
}

const char* kTrainable[] = {"softmax", "sinkhorn:T=5", "esp:tau=0.5,sort_temp=0.1", "lot:r=4,T=5"};

TEST(Vit, ParameterNamesAreTheHuggingFaceCheckpointNames) {
  for (const char* attention : kTrainable) {
    const VitConfig c = tinyConfig(attention);
    VitModel model(c);
    const auto expected = vitTensorShapes(c);
    const auto params = model->named_parameters();
    ASSERT_EQ(params.size(), expected.size()) << attention;
    for (const auto& p : params) {
      ASSERT_TRUE(expected.count(p.key())) << attention << ": " << p.key();
      EXPECT_EQ(std::vector<int64_t>(p.value().sizes().begin(), p.value().sizes().end()), expected.at(p.key()));
    }
  }
}

TEST(Vit, EveryParameterGetsAFiniteNonzeroGradient) {
  for (const char* attention : kTrainable) {
    torch::manual_seed(1);
    VitModel model(tinyConfig(attention));
    model->train();
    const torch::Tensor loss =
        torch::nn::functional::cross_entropy(model->forward(images(6)), torch::tensor({0, 1, 2, 3, 0, 1}));
    loss.backward();
    for (const auto& p : model->named_parameters()) {
      const torch::Tensor g = p.value().grad();
      ASSERT_TRUE(g.defined()) << attention << ": " << p.key();
      EXPECT_TRUE(torch::isfinite(g).all().item<bool>()) << attention << ": " << p.key();
      EXPECT_GT(g.abs().max().item<double>(), 0) << attention << ": " << p.key();
    }
  }
}

TEST(Vit, ConstructionIsDeterministicGivenTheSeed) {
  torch::manual_seed(42);
  VitModel a(tinyConfig("lot:r=4"));
  torch::manual_seed(42);
  VitModel b(tinyConfig("lot:r=4"));
  const TensorMap sa = a->state(), sb = b->state();
  for (const auto& [name, t] : sa) EXPECT_EQ(t.values, sb.at(name).values) << name;
}

TEST(Vit, BatchedForwardEqualsOneImageAtATime) {
  torch::manual_seed(2);
  VitModel model(tinyConfig("sinkhorn:T=3"));
  model->eval();
  torch::NoGradGuard noGrad;
  const torch::Tensor x = images(3), all = model->forward(x);
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_TRUE(torch::allclose(all[i], model->forward(x.slice(0, i, i + 1))[0], 1e-6, 1e-6)) << i;
}

TEST(Vit, SavedCheckpointLoadsToIdenticalLogits) {
  for (const char* attention : kTrainable) {
    torch::manual_seed(5);
    VitModel model(tinyConfig(attention));
    model->eval();
    test::TempDir dir;
    writeVitCheckpoint(dir.file("ckpt"), checkpointOf(model));
    VitModel loaded = makeVitModel(readVitCheckpoint(dir.file("ckpt")), "ckpt");
    torch::NoGradGuard noGrad;
    const torch::Tensor x = images(2);
    EXPECT_TRUE(torch::equal(model->forward(x), loaded->forward(x))) << attention;
    EXPECT_EQ(loaded->config().attention.toString(), model->config().attention.toString());
  }
}

// The loading path: weights decoded from the mapped file straight into the parameters of a model that skipped its
// random start give the same model, bit for bit (LOT's learned pivots included); progress rises to 1 and a
// cancelled load stops with Canceled.
TEST(Vit, LoadingFromTheMappedFileGivesTheSameModel) {
  for (const char* attention : kTrainable) {
    torch::manual_seed(5);
    VitModel model(tinyConfig(attention));
    model->eval();
    test::TempDir dir;
    writeVitCheckpoint(dir.file("ckpt"), checkpointOf(model));
    std::vector<double> fractions;
    Feedback feedback([&](double fraction, const std::string&) { fractions.push_back(fraction); });
    VitModel loaded = makeVitModel(openVitCheckpoint(dir.file("ckpt")), "ckpt", feedback);
    const TensorMap want = model->state(), got = loaded->state();
    ASSERT_EQ(got.size(), want.size()) << attention;
    for (const auto& [name, t] : want) EXPECT_EQ(got.at(name).values, t.values) << attention << " " << name;
    ASSERT_FALSE(fractions.empty());
    EXPECT_TRUE(std::is_sorted(fractions.begin(), fractions.end())) << attention;
    EXPECT_DOUBLE_EQ(fractions.back(), 1.0) << attention;

    Feedback cancelled;
    cancelled.cancel();
    EXPECT_THROW(makeVitModel(openVitCheckpoint(dir.file("ckpt")), "ckpt", cancelled), Canceled) << attention;
  }
}

TEST(Vit, PivotsFromAFileLiveInTheCheckpointNotInItsConfig) {
  test::TempDir dir;
  const MatD pivots = test::gaussian(3, 8, 9, 0.4);
  writeNpy(dir.file("pivots.npy"), pivots);
  VitModel model(tinyConfig("lot:pivots=" + dir.file("pivots.npy")));
  model->eval();
  const torch::Tensor learned = model->named_parameters()["vit.encoder.layer.1.attention.attention.normaliser.pivots"];
  EXPECT_NEAR(learned[1][2][5].item<double>(), pivots(2, 5), 1e-7);  // every head starts from the file

  const VitCheckpoint ckpt = checkpointOf(model);
  EXPECT_EQ(getInt(ckpt.config.attention.params, "r"), 3);
  EXPECT_FALSE(getOptionalString(ckpt.config.attention.params, "pivots"));
  writeVitCheckpoint(dir.file("ckpt"), ckpt);
  std::filesystem::remove(dir.file("pivots.npy"));
  VitModel loaded = makeVitModel(readVitCheckpoint(dir.file("ckpt")), "ckpt");
  torch::NoGradGuard noGrad;
  EXPECT_TRUE(torch::equal(model->forward(images(2)), loaded->forward(images(2))));
}

}  // namespace
}  // namespace tl
