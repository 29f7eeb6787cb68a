// core/model/vit_inference: PyTorch-made fixtures (scripts/reference/make_vit_fixtures.py) in every
// checkpoint format give the reference logits; the trace and the core-operator re-runs behave as the
// header says. Uses only the plain (torch-free) API, as the CLI and the GUI do.
#include "model/vit_inference.h"

#include <filesystem>

#include "common/errors.h"
#include "io/checkpoint/safetensors.h"
#include "io/npy.h"
#include "ops/asap/asap.h"
#include "ops/asap/compiled_asap.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::matricesNear;
using test::kVitFixtures;
using test::throwsWith;

struct Fixture {
  std::vector<HostTensor> images;  // C×H×W each
  MatD logits;                     // one row per image
};

Fixture loadFixture(const std::string& folder) {
  Fixture f;
  const NpyArray images = readNpy(kVitFixtures + folder + "/images.npy");
  const int64_t per = images.shape[1] * images.shape[2] * images.shape[3];
  for (int64_t i = 0; i < images.shape[0]; ++i) {
    HostTensor t;
    t.shape = {images.shape[1], images.shape[2], images.shape[3]};
    t.values.assign(images.values.begin() + i * per, images.values.begin() + (i + 1) * per);
    f.images.push_back(std::move(t));
  }
  f.logits = readNpyMatrix<double>(kVitFixtures + folder + "/logits.npy");
  return f;
}

[[nodiscard]] ::testing::AssertionResult logitsMatch(const VitRunner& runner, const Fixture& f, double tol) {
  for (size_t i = 0; i < f.images.size(); ++i)
    if (auto r = matricesNear(runner.logits(f.images[i]).transpose(), f.logits.row(Eigen::Index(i)), tol); !r)
      return r << " (image " << i << ")";
  return ::testing::AssertionSuccess();
}

VitImportOptions side(const std::string& folder) {
  VitImportOptions o;
  o.sideFile = kVitFixtures + folder + "/side.json";
  return o;
}

TEST(VitInference, EveryCheckpointFormatGivesThePyTorchLogits) {
  const std::vector<std::tuple<std::string, std::string, VitImportOptions>> cases = {
      {"hf_softmax", "", {}},
      {"hf_softmax", "model.safetensors", {}},
      {"hf_softmax", "torchscript.pt", {}},
      {"hf_sinkhorn_T4", "", {}},
      {"hf_esp", "", {}},
      {"hf_lot", "", {}},
      {"vitpytorch_sinkhorn", "state_dict.pt", side("vitpytorch_sinkhorn")},
      {"vitpytorch_sinkhorn", "state_dict_dict.pt", side("vitpytorch_sinkhorn")},
      {"vitpytorch_mean", "model.safetensors", side("vitpytorch_mean")},
  };
  for (const auto& [folder, file, options] : cases) {
    const VitRunner runner = VitRunner::open(kVitFixtures + folder + (file.empty() ? "" : "/" + file), options);
    EXPECT_TRUE(logitsMatch(runner, loadFixture(folder), 1e-5)) << folder << "/" << file;
  }
}

TEST(VitInference, ConfigsComeFromTheCheckpoint) {
  const VitRunner hf = VitRunner::open(kVitFixtures + "hf_softmax");
  EXPECT_EQ(hf.config().labels, (std::vector<std::string>{"cat", "dog", "bird"}));
  EXPECT_EQ(hf.config().normalisation.mean, (std::vector<double>{0.5, 0.4, 0.3}));  // preprocessor_config.json
  const VitRunner sinkformer =
      VitRunner::open(kVitFixtures + "vitpytorch_sinkhorn/state_dict.pt", side("vitpytorch_sinkhorn"));
  EXPECT_EQ(sinkformer.config().attention.toString(), "sinkhorn:T=3,eps=1,mask_mode=subsequence");
  EXPECT_DOUBLE_EQ(sinkformer.config().layerNormEps, 1e-5);
}

TEST(VitInference, TraceHoldsEveryLayerAndHead) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_sinkhorn_T4");
  const Fixture f = loadFixture("hf_sinkhorn_T4");
  const VitTrace trace = runner.run(f.images[1]);
  EXPECT_TRUE(matricesNear(trace.logits, runner.logits(f.images[1]), 0.0));
  ASSERT_EQ(trace.layers.size(), 2u);
  EXPECT_EQ(trace.embeddings.rows(), 5);
  for (const auto& layer : trace.layers) {
    EXPECT_EQ(layer.op.family, "sinkhorn");
    EXPECT_FALSE(layer.swapped);
    ASSERT_EQ(layer.heads.size(), 2u);
    EXPECT_EQ(layer.output.cols(), 16);
    for (const auto& h : layer.heads) {
      EXPECT_EQ(h.input.Q.cols(), 6);  // head_dim 6 while hidden is 16
      EXPECT_EQ(h.input.V->rows(), 5);
      // T = 4 ends on columns: column sums are exactly 1.
      EXPECT_TRUE(matricesNear(h.attention.colwise().sum(), MatD::Ones(1, 5), 1e-6));
      EXPECT_TRUE(matricesNear(h.output, h.attention * *h.input.V, 1e-6));
    }
  }
}

// The model's own normaliser at every layer, run through the core operator instead of LibTorch.
TEST(VitInference, SwappingInTheModelsOwnNormaliserThroughTheCoreReproducesTheLogits) {
  for (const char* folder : {"hf_softmax", "hf_sinkhorn_T4", "hf_esp", "hf_lot"}) {
    const VitRunner runner = VitRunner::open(kVitFixtures + folder);
    const Fixture f = loadFixture(folder);
    std::map<int, OperatorSpec> own;
    for (int l = 0; l < runner.config().numLayers; ++l) own[l] = runner.config().attention;
    for (const auto& image : f.images) {
      const VitTrace base = runner.run(image);
      const VitTrace swapped = runner.rerun(base, 0, own);
      EXPECT_TRUE(matricesNear(swapped.logits, base.logits, 1e-5)) << folder;
      for (size_t l = 0; l < base.layers.size(); ++l) {
        EXPECT_TRUE(swapped.layers[l].swapped);
        ASSERT_TRUE(swapped.layers[l].heads[0].core.has_value());
        EXPECT_TRUE(matricesNear(swapped.layers[l].heads[0].attention, base.layers[l].heads[0].attention, 1e-5)) << folder;
      }
    }
  }
}

TEST(VitInference, RerunKeepsEarlierLayersAndSwapsOnlyTheChosenOnes) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_softmax");
  const VitTrace base = runner.run(loadFixture("hf_softmax").images[0]);
  const VitTrace same = runner.rerun(base, 1, {});
  EXPECT_TRUE(matricesNear(same.logits, base.logits, 1e-6));

  const VitTrace ds = runner.rerun(base, 1, {{1, OperatorRegistry::builtin().parse("sinkhorn:T=200")}});
  EXPECT_TRUE(matricesNear(ds.layers[0].output, base.layers[0].output, 0.0));  // copied, not re-run
  EXPECT_FALSE(ds.layers[0].swapped);
  EXPECT_TRUE(ds.layers[1].swapped);
  for (const auto& h : ds.layers[1].heads) {  // a converged Sinkhorn plan is doubly stochastic
    EXPECT_TRUE(matricesNear(h.attention.rowwise().sum(), MatD::Ones(5, 1), 1e-6));
    EXPECT_TRUE(matricesNear(h.attention.colwise().sum(), MatD::Ones(1, 5), 1e-6));
    EXPECT_EQ(h.core->errorHistory.size(), 200u);
  }
  EXPECT_FALSE(matricesNear(ds.logits, base.logits, 1e-6));

  // Families without a LibTorch version run through the core path too.
  const VitTrace banded = runner.rerun(base, 0, {{0, OperatorRegistry::builtin().parse("banded:W=1")}});
  EXPECT_EQ(banded.layers[0].op.family, "banded");
  EXPECT_EQ(banded.layers[0].heads[1].attention(0, 4), 0.0);  // outside the band |i − j| ≤ 1
}

// asap:compiled=DIR swapped into several layers: each layer runs with its own compiled slices and β (the
// `layer` parameter left at −1 takes the layer it replaces; docs/operators/asap.md#compiled-models).
TEST(VitInference, ACompiledAsapModelUsesEachLayersOwnCoefficients) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_sinkhorn_T4");
  test::TempDir dir;
  CompiledAsap compiled;
  compiled.teacher = runner.config().attention.toString();
  compiled.T = 4;
  compiled.eps = 0.5;
  compiled.closing = "column";
  for (int l = 0; l < 2; ++l) {
    CompiledAsapLayer layer;
    layer.layer = l;
    layer.slices = test::gaussian(4, runner.config().headDim, 30 + l);
    layer.beta = test::gaussian(4, 1, 40 + l);
    compiled.layers.push_back(layer);
  }
  compiled.roundToStoredPrecision();
  saveCompiledAsap(dir.path().string(), compiled);
  const OperatorSpec asap = OperatorRegistry::builtin().parse("asap:compiled=" + dir.path().string() + ",eps=0.5");
  const VitTrace base = runner.run(loadFixture("hf_sinkhorn_T4").images[0]);
  const VitTrace swapped = runner.rerun(base, 0, {{0, asap}, {1, asap}});
  for (int l = 0; l < 2; ++l) {
    EXPECT_EQ(getInt(swapped.layers[size_t(l)].op.params, "layer"), l);
    const VitHeadTrace& head = swapped.layers[size_t(l)].heads[1];
    AsapParams p;
    p.eps = 0.5;
    p.slices = compiled.layers[size_t(l)].slices;
    p.beta = compiled.layers[size_t(l)].beta;
    EXPECT_TRUE(matricesNear(head.core->plan.dense(), asapAttention(head.input, p).plan.dense(), 0.0)) << "layer " << l;
  }
}

TEST(VitInference, BadRequestsAreRefusedClearly) {
  const VitRunner runner = VitRunner::open(kVitFixtures + "hf_softmax");
  const VitTrace base = runner.run(loadFixture("hf_softmax").images[0]);
  EXPECT_TRUE(throwsWith<InvalidArgument>(
      [&] { runner.rerun(base, 1, {{0, OperatorRegistry::builtin().parse("softmax")}}); }, {"layer 0", "would not run"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { runner.rerun(base, 2, {}); }, {"layer 2"}));
  HostTensor wrong;
  wrong.shape = {1, 8, 8};
  wrong.values.assign(64, 0.5f);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { runner.logits(wrong); }, {"3×8×8"}));
  EXPECT_TRUE(throwsWith<FileError>([&] { VitRunner::open(kVitFixtures + "vitpytorch_sinkhorn/state_dict.pt"); },
                                    {"state_dict.pt", "heads is missing"}));
}

TEST(VitInference, MissingTensorsAreNamedWithTheirFile) {
  test::TempDir dir;
  VitCheckpoint ckpt = VitRunner::open(kVitFixtures + "hf_lot").checkpoint();
  ckpt.tensors.erase("vit.encoder.layer.0.attention.attention.normaliser.pivots");
  std::filesystem::create_directories(dir.file("ckpt"));
  test::writeBytes(dir.file("ckpt/config.json"), vitConfigJson(ckpt.config));
  writeSafetensors(dir.file("ckpt/model.safetensors"), ckpt.tensors, {});
  EXPECT_TRUE(throwsWith<FileError>([&] { readVitCheckpoint(dir.file("ckpt")); },
                                    {"model.safetensors", "vit.encoder.layer.0.attention.attention.normaliser.pivots",
                                     "missing"}));
  EXPECT_TRUE(throwsWith<FileError>([&] { readVitCheckpoint(dir.file("nothing")); }, {"nothing"}));
}

}  // namespace
}  // namespace tl
