// core/model/weight_names: HF tensor names and shapes, and the vit-pytorch → HF conversion.
#include "vit/weight_names.h"

#include "common/errors.h"
#include "support/test_util.h"
#include "vit/vit_checkpoint.h"

namespace tl {
namespace {

using test::throwsWith;

// A tensor whose entry i holds offset + i, so every moved value can be traced back.
HostTensor counting(std::vector<int64_t> shape, float offset) {
  HostTensor t;
  t.shape = std::move(shape);
  t.values.resize(size_t(t.numel()));
  for (size_t i = 0; i < t.values.size(); ++i) t.values[i] = offset + float(i);
  return t;
}

// vit-pytorch ViT(image_size=4, patch_size=2, channels=3, dim=4, depth=2, heads=2, dim_head=3, mlp_dim=8,
// num_classes=3), the Sinkformer-era layout.
TensorMap vitPytorchStateDict() {
  TensorMap sd;
  float next = 0;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    sd[name] = counting(shape, next);
    next += 1000;
  };
  add("to_patch_embedding.1.weight", {4, 12});
  add("to_patch_embedding.1.bias", {4});
  add("pos_embedding", {1, 5, 4});
  add("cls_token", {1, 1, 4});
  for (int i = 0; i < 2; ++i) {
    const std::string p = "transformer.layers." + std::to_string(i) + ".";
    add(p + "0.norm.weight", {4});
    add(p + "0.norm.bias", {4});
    add(p + "0.fn.to_qkv.weight", {18, 4});
    add(p + "0.fn.to_out.0.weight", {4, 6});
    add(p + "0.fn.to_out.0.bias", {4});
    add(p + "1.norm.weight", {4});
    add(p + "1.norm.bias", {4});
    add(p + "1.fn.net.0.weight", {8, 4});
    add(p + "1.fn.net.0.bias", {8});
    add(p + "1.fn.net.3.weight", {4, 8});
    add(p + "1.fn.net.3.bias", {4});
  }
  add("mlp_head.0.weight", {4});
  add("mlp_head.0.bias", {4});
  add("mlp_head.1.weight", {3, 4});
  add("mlp_head.1.bias", {3});
  return sd;
}

VitPytorchOptions twoHeads() {
  VitPytorchOptions o;
  o.heads = 2;
  return o;
}

TEST(WeightNames, ConvertsTheSinkformerLayoutAndInfersSizesFromShapes) {
  const TensorMap sd = vitPytorchStateDict();
  const VitCheckpoint ckpt = convertVitPytorch(sd, twoHeads(), "sd.pt");
  const VitConfig& c = ckpt.config;
  EXPECT_EQ(c.hiddenSize, 4);
  EXPECT_EQ(c.numLayers, 2);
  EXPECT_EQ(c.numHeads, 2);
  EXPECT_EQ(c.headDim, 3);
  EXPECT_EQ(c.patchSize, 2);
  EXPECT_EQ(c.numChannels, 3);  // vit-pytorch's default channels
  EXPECT_EQ(c.imageSize, 4);
  EXPECT_EQ(c.intermediateSize, 8);
  EXPECT_EQ(c.numLabels(), 3);
  EXPECT_FALSE(c.qkvBias);
  EXPECT_DOUBLE_EQ(c.layerNormEps, 1e-5);
  EXPECT_EQ(ckpt.tensors.size(), vitTensorShapes(c).size());

  // (p1 p2 c)-flattened Linear → conv weight[o, c, p1, p2] = W[o, (p1·p + p2)·C + c].
  const HostTensor& W = sd.at("to_patch_embedding.1.weight");
  const HostTensor& conv = ckpt.tensors.at("vit.embeddings.patch_embeddings.projection.weight");
  EXPECT_EQ(conv.shape, (std::vector<int64_t>{4, 3, 2, 2}));
  const int o = 2, ch = 1, p1 = 1, p2 = 0;
  EXPECT_EQ(conv.values[size_t(((o * 3 + ch) * 2 + p1) * 2 + p2)], W.values[size_t(o * 12 + (p1 * 2 + p2) * 3 + ch)]);

  // to_qkv rows: Q, then K, then V.
  const HostTensor& qkv = sd.at("transformer.layers.1.0.fn.to_qkv.weight");
  const HostTensor& key = ckpt.tensors.at("vit.encoder.layer.1.attention.attention.key.weight");
  EXPECT_EQ(key.shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(key.values.front(), qkv.values[6 * 4]);
  EXPECT_EQ(ckpt.tensors.at("vit.encoder.layer.0.output.dense.bias").values,
            sd.at("transformer.layers.0.1.fn.net.3.bias").values);
  EXPECT_EQ(ckpt.tensors.at("vit.layernorm.weight").values, sd.at("mlp_head.0.weight").values);
}

TEST(WeightNames, IdentityOutputProjectionWhenOneHeadSpansTheWidth) {
  TensorMap sd = vitPytorchStateDict();
  for (int i = 0; i < 2; ++i) {
    const std::string p = "transformer.layers." + std::to_string(i) + ".0.fn.";
    sd.erase(p + "to_out.0.weight");
    sd.erase(p + "to_out.0.bias");
    sd[p + "to_qkv.weight"] = counting({12, 4}, 0);
  }
  VitPytorchOptions o;
  o.heads = 1;
  const VitCheckpoint ckpt = convertVitPytorch(sd, o, "sd.pt");
  const HostTensor& dense = ckpt.tensors.at("vit.encoder.layer.0.attention.output.dense.weight");
  EXPECT_EQ(dense.values, (std::vector<float>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
}

TEST(WeightNames, MissingInformationAndTensorsAreNamed) {
  const TensorMap sd = vitPytorchStateDict();
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(sd, {}, "sd.pt"); }, {"sd.pt", "heads is missing"}));
  VitPytorchOptions oneChannel = twoHeads();
  oneChannel.channels = 1;  // 12 = p²·1 has no integer p
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(sd, oneChannel, "sd.pt"); }, {"patch_size is missing"}));
  VitPytorchOptions wrongDim = twoHeads();
  wrongDim.dim = 8;
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(sd, wrongDim, "sd.pt"); }, {"dim = 8", "4"}));

  TensorMap missing = sd;
  missing.erase("transformer.layers.1.1.fn.net.3.bias");
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(missing, twoHeads(), "sd.pt"); },
                                    {"transformer.layers.1.1.fn.net.3.bias", "missing"}));
  TensorMap extra = sd;
  extra["transformer.layers.0.0.fn.scale"] = counting({1}, 0);
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(extra, twoHeads(), "sd.pt"); },
                                    {"unexpected tensor", "transformer.layers.0.0.fn.scale"}));
  TensorMap wrongShape = sd;
  wrongShape["transformer.layers.0.1.norm.weight"] = counting({5}, 0);
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(wrongShape, twoHeads(), "sd.pt"); },
                                    {"transformer.layers.0.1.norm.weight", "[5]", "[4]"}));
  // Found by the fuzz campaign: an empty pos_embedding claims −1 patch positions, whose square root overflowed.
  TensorMap noPositions = sd;
  noPositions["pos_embedding"] = counting({1, 0, 4}, 0);
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(noPositions, twoHeads(), "sd.pt"); },
                                    {"pos_embedding", "-1 patch positions", "square grid"}));
}

TEST(WeightNames, RefusesTheNewerVitPytorchLayoutSayingWhy) {
  TensorMap sd = vitPytorchStateDict();
  sd["to_patch_embedding.2.weight"] = counting({4}, 0);
  EXPECT_TRUE(throwsWith<FileError>([&] { convertVitPytorch(sd, twoHeads(), "new.pt"); },
                                    {"new.pt", "newer vit-pytorch layout", "to_patch_embedding.2.weight"}));
}

TEST(WeightNames, CheckNamesMissingUnexpectedAndMisshapenTensors) {
  const VitCheckpoint ckpt = convertVitPytorch(vitPytorchStateDict(), twoHeads(), "sd.pt");
  EXPECT_NO_THROW(checkVitTensors(ckpt.tensors, ckpt.config, "model.safetensors"));
  TensorMap t = ckpt.tensors;
  t.erase("classifier.bias");
  EXPECT_TRUE(throwsWith<FileError>([&] { checkVitTensors(t, ckpt.config, "model.safetensors"); },
                                    {"model.safetensors", "classifier.bias", "missing"}));
  t = ckpt.tensors;
  t["vit.pooler.dense.weight"] = counting({4, 4}, 0);
  EXPECT_TRUE(throwsWith<FileError>([&] { checkVitTensors(t, ckpt.config, "m"); }, {"unexpected", "vit.pooler.dense.weight"}));
  t = ckpt.tensors;
  t["vit.embeddings.position_embeddings"] = counting({1, 6, 4}, 0);
  EXPECT_TRUE(throwsWith<FileError>([&] { checkVitTensors(t, ckpt.config, "m"); },
                                    {"vit.embeddings.position_embeddings", "[1, 6, 4]", "[1, 5, 4]"}));
}

TEST(WeightNames, LotModelsCarryTheirPivots) {
  VitConfig c = convertVitPytorch(vitPytorchStateDict(), twoHeads(), "sd.pt").config;
  c.attention = OperatorRegistry::builtin().parse("lot:r=4");
  const auto shapes = vitTensorShapes(c);
  EXPECT_EQ(shapes.at("vit.encoder.layer.1.attention.attention.normaliser.pivots"), (std::vector<int64_t>{2, 4, 3}));
  EXPECT_EQ(shapes.at("vit.encoder.layer.1.attention.attention.normaliser.mass_logits"), (std::vector<int64_t>{2, 4}));
}

}  // namespace
}  // namespace tl
