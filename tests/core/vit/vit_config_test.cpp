// core/model/vit_config: HF ViTConfig fields, the transportlens block, errors that name file and field.
#include "vit/vit_config.h"

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::throwsWith;

const char* kHfConfig = R"({
  "architectures": ["ViTForImageClassification"], "model_type": "vit",
  "hidden_size": 64, "num_hidden_layers": 6, "num_attention_heads": 4, "intermediate_size": 128,
  "hidden_act": "gelu", "layer_norm_eps": 1e-12, "image_size": 28, "patch_size": 4, "num_channels": 1,
  "qkv_bias": true, "id2label": {"0": "T-shirt", "1": "Trouser"}, "label2id": {"T-shirt": 0, "Trouser": 1}
})";

std::string withField(const std::string& json, const std::string& field) {
  std::string out = json;
  out.insert(out.rfind('}'), ", " + field);
  return out;
}

TEST(VitConfig, ReadsHuggingFaceFieldsAndDefaultsToSoftmax) {
  const VitConfig c = parseVitConfig(kHfConfig, "config.json");
  EXPECT_EQ(c.hiddenSize, 64);
  EXPECT_EQ(c.numLayers, 6);
  EXPECT_EQ(c.numHeads, 4);
  EXPECT_EQ(c.headDim, 16);
  EXPECT_EQ(c.intermediateSize, 128);
  EXPECT_EQ(c.numChannels, 1);
  EXPECT_EQ(c.numTokens(), 50);
  EXPECT_EQ(c.labels, (std::vector<std::string>{"T-shirt", "Trouser"}));
  EXPECT_EQ(c.attention.family, "softmax");
  EXPECT_EQ(c.pool, VitPooling::Cls);
}

TEST(VitConfig, TransportLensBlockNamesTheNormaliserInRegistrySyntax) {
  const VitConfig c = parseVitConfig(
      withField(kHfConfig, R"("transportlens": {"attention": "sinkhorn:T=5,eps=1", "pool": "mean",
                                                "image_mean": [0.2860], "image_std": [0.3530]})"),
      "config.json");
  EXPECT_EQ(c.attention.family, "sinkhorn");
  EXPECT_EQ(getInt(c.attention.params, "T"), 5);
  EXPECT_EQ(getString(c.attention.params, "mask_mode"), "subsequence");  // registry default filled in
  EXPECT_EQ(c.pool, VitPooling::Mean);
  EXPECT_EQ(c.normalisation.mean, std::vector<double>{0.2860});
}

TEST(VitConfig, WrittenConfigReadsBackTheSame) {
  VitConfig c = parseVitConfig(withField(kHfConfig, R"("transportlens": {"attention": "lot:r=8,T=3", "head_dim": 8})"),
                               "config.json");
  const VitConfig back = parseVitConfig(vitConfigJson(c), "written");
  EXPECT_EQ(back.headDim, 8);
  EXPECT_EQ(back.attention.toString(), c.attention.toString());
  EXPECT_EQ(back.labels, c.labels);
  EXPECT_EQ(back.layerNormEps, c.layerNormEps);
  EXPECT_EQ(back.normalisation.std, c.normalisation.std);
}

TEST(VitConfig, ErrorsNameTheFileAndTheField) {
  std::string noHidden = kHfConfig;
  noHidden.replace(noHidden.find("\"hidden_size\": 64,"), 18, "");
  EXPECT_TRUE(throwsWith<FileError>([&] { parseVitConfig(noHidden, "ckpt/config.json"); },
                                    {"ckpt/config.json", "hidden_size", "missing"}));
  EXPECT_TRUE(throwsWith<FileError>(
      [&] { parseVitConfig(withField(kHfConfig, R"("transportlens": {"attention": "sinkhorn:T=0"})"), "c.json"); },
      {"c.json", "transportlens.attention", "T"}));
  EXPECT_TRUE(throwsWith<FileError>(
      [&] { parseVitConfig(withField(kHfConfig, R"("transportlens": {"attention": "bogus"})"), "c.json"); },
      {"transportlens.attention", "unknown operator family"}));
  std::string badPatch = kHfConfig;
  badPatch.replace(badPatch.find("\"patch_size\": 4"), 15, "\"patch_size\": 5");
  EXPECT_TRUE(throwsWith<FileError>([&] { parseVitConfig(badPatch, "c.json"); }, {"patch_size", "image_size"}));
  EXPECT_TRUE(throwsWith<FileError>([&] { parseVitConfig("{not json", "c.json"); }, {"c.json", "JSON"}));
  std::string noLabels = kHfConfig;
  noLabels.replace(noLabels.find("\"id2label\""), 10, "\"unused\"");
  EXPECT_TRUE(throwsWith<FileError>([&] { parseVitConfig(noLabels, "c.json"); }, {"id2label", "num_labels"}));
}

// Found by the fuzzer (tests/fuzz/corpus/hf_model/found-2e30-layers): a config asking for 2^30 layers made the
// loader list 16 tensor names per layer before any weight was read.
TEST(VitConfig, RefusesSizesBeyondAnyVit) {
  std::string deep = kHfConfig;
  const size_t at = deep.find("\"num_hidden_layers\": ");
  ASSERT_NE(at, std::string::npos);
  deep.replace(at, deep.find(',', at) - at, "\"num_hidden_layers\": 1073741824");
  EXPECT_TRUE(throwsWith<FileError>([&] { parseVitConfig(deep, "c.json"); }, {"num_hidden_layers", "no larger than 1024"}));
  std::string manyLabels = kHfConfig;
  manyLabels.replace(manyLabels.find("\"id2label\""), 10, "\"unused\"");
  EXPECT_TRUE(throwsWith<FileError>([&] { parseVitConfig(withField(manyLabels, R"("num_labels": 1073741824)"), "c.json"); },
                                    {"num_labels", "no larger than"}));
}

TEST(VitConfig, NormalisesPixelsPerChannel) {
  VitConfig c = parseVitConfig(kHfConfig, "config.json");
  c.imageSize = 2;
  c.patchSize = 1;
  c.numChannels = 2;
  c.normalisation = {{0.5, 0.25}, {0.5, 0.25}};
  const auto out = normaliseImage(c, {2, 2, 2}, {0, 0.5, 1, 1, 0, 0.25, 0.5, 1});
  EXPECT_EQ(out, (std::vector<float>{-1, 0, 1, 1, -1, 0, 1, 3}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { normaliseImage(c, {1, 2, 2}, {0, 0, 0, 0}); }, {"2×2×2"}));
}

}  // namespace
}  // namespace tl
