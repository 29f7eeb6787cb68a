// A compiled model's state (docs/operators/asap.md#compiled-models): saved and loaded back it is the same
// bit for bit, `asap:compiled=DIR,layer=l` gives the same plan as the in-memory slices and β, and bad
// requests get their reason.
#include "ops/asap/compiled_asap.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "ops/asap/asap.h"
#include "ops/registry.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::throwsWith;

CompiledAsap sampleModel() {
  CompiledAsap c;
  c.checkpoint = "ckpt";
  c.calibration = "fashion-mnist:train:0-9";
  c.teacher = "sinkhorn:T=4,eps=0.5,mask_mode=subsequence";
  c.T = 4;
  c.eps = 0.5;
  c.closing = "column";
  for (int layer : {0, 2}) {
    CompiledAsapLayer l;
    l.layer = layer;
    l.slices = gaussian(5, 8, 10 + layer);
    l.beta = gaussian(5, 1, 20 + layer);
    l.seed = 3;
    l.fit = "ls";
    l.lambdaB = 1e-4;
    l.lambda = 0.3;
    l.rows = 300;
    l.instances = 12;
    l.r2 = 0.7;
    l.delta = 1.5;
    l.fitSeconds = 0.25;
    c.layers.push_back(l);
  }
  c.roundToStoredPrecision();
  return c;
}

TEST(CompiledAsap, SaveAndLoadRoundTripBitForBit) {
  test::TempDir dir;
  const CompiledAsap saved = sampleModel();
  saveCompiledAsap(dir.path().string(), saved);
  const CompiledAsap loaded = loadCompiledAsap(dir.path().string());
  EXPECT_EQ(loaded.teacher, saved.teacher);
  EXPECT_EQ(loaded.eps, saved.eps);
  ASSERT_EQ(loaded.layers.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(loaded.layers[i].layer, saved.layers[i].layer);
    EXPECT_TRUE(test::matricesIdentical(loaded.layers[i].slices, saved.layers[i].slices));
    EXPECT_TRUE(test::matricesIdentical(loaded.layers[i].beta, saved.layers[i].beta));
    EXPECT_EQ(loaded.layers[i].r2, saved.layers[i].r2);
    EXPECT_EQ(loaded.layers[i].lambda, saved.layers[i].lambda);
  }
  // The operator reading the folder gives exactly the plan of the in-memory layer.
  AttentionInput<double> in{gaussian(11, 8, 1), gaussian(11, 8, 2), gaussian(11, 3, 3), std::nullopt};
  const auto& registry = OperatorRegistry::builtin();
  const auto fromFolder = registry.create(registry.parse("asap:compiled=" + dir.path().string() + ",layer=2,eps=0.5"))->run(in, noFeedback());
  AsapParams inMemory;
  inMemory.eps = 0.5;
  inMemory.slices = saved.at(2).slices;
  inMemory.beta = saved.at(2).beta;
  const auto direct = asapAttention(in, inMemory);
  EXPECT_TRUE(test::matricesIdentical(fromFolder.plan.dense(), direct.plan.dense()));
  EXPECT_TRUE(test::matricesIdentical(*fromFolder.output, *direct.output));
}

TEST(CompiledAsap, RequestsThatCannotRunSayWhy) {
  test::TempDir dir;
  saveCompiledAsap(dir.path().string(), sampleModel());
  const auto& registry = OperatorRegistry::builtin();
  auto make = [&](const std::string& text) { return registry.create(registry.parse(text)); };
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { make("asap:compiled=" + dir.path().string() + ",layer=1,eps=0.5"); }, {"layer 1", "0, 2"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { make("asap:compiled=" + dir.path().string() + ",layer=0"); }, {"eps=0.5"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { make("asap:compiled=" + dir.path().string() + ",eps=0.5"); }, {"layer="}));
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)loadCompiledAsap(dir.path().string() + "/missing"); }, {"asap.json"}));
  test::writeBytes(dir.path().string() + "/asap.json", "{\"format\": \"transportlens-asap\"}");
  EXPECT_TRUE(throwsWith<FileError>([&] { (void)loadCompiledAsap(dir.path().string()); }, {"asap.json"}));
}

}  // namespace
}  // namespace tl
