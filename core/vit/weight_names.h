#pragma once
// Tensor names of a ViT: the Hugging Face ViTForImageClassification layout the project uses, and the
// conversion from lucidrains/vit-pytorch state dicts (the layout of its early versions, as used by the
// Sinkformer and ESPFormer code) into it. No LibTorch here.
//
// vit-pytorch (PreNorm blocks, patch embedding = Rearrange + Linear)   →  Hugging Face
//   to_patch_embedding.1.{weight,bias}  [D, p·p·C], flattened (p1 p2 c)  →  vit.embeddings.patch_embeddings.projection [D, C, p, p]
//   cls_token [1, 1, D], pos_embedding [1, n+1, D]                        →  vit.embeddings.cls_token, .position_embeddings
//   transformer.layers.{i}.0.norm                                         →  vit.encoder.layer.{i}.layernorm_before
//   transformer.layers.{i}.0.fn.to_qkv.weight [3·h·d, D] (no bias)        →  ….attention.attention.{query,key,value}.weight
//   transformer.layers.{i}.0.fn.to_out.0 (absent when heads = 1, d = D)   →  ….attention.output.dense (identity when absent)
//   transformer.layers.{i}.1.norm                                         →  ….layernorm_after
//   transformer.layers.{i}.1.fn.net.0, .net.3 (Linear, GELU, Linear)      →  ….intermediate.dense, ….output.dense
//   mlp_head.0 (LayerNorm), mlp_head.1 (Linear)                           →  vit.layernorm, classifier
// Later vit-pytorch versions (LayerNorm + Linear + LayerNorm patch embedding, norms inside Attention and
// FeedForward, transformer.norm) have no HF equivalent and are refused with a message that says so.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "io/checkpoint/stored_tensor.h"
#include "io/checkpoint/tensor_map.h"
#include "vit/vit_config.h"

namespace tl {

struct VitCheckpoint;

// Every tensor a model with `config` holds, by HF name, with its shape; includes the normaliser's learned
// tensors (LOT: ….attention.attention.normaliser.pivots [H, r, d] and .mass_logits [H, r]).
std::map<std::string, std::vector<int64_t>> vitTensorShapes(const VitConfig& config);

// FileError naming `source` and the first missing tensor, unexpected tensor or shape mismatch.
void checkVitTensors(const TensorMap& tensors, const VitConfig& config, const std::string& source);
void checkVitTensors(const StoredTensorMap& tensors, const VitConfig& config, const std::string& source);

// The ViT(...) constructor arguments of vit-pytorch, under its own names, that the shapes cannot tell
// (heads or dim_head, patch_size or channels) or that are not in the weights (pool, the normaliser it was
// trained with, labels, pixel normalisation). Arguments the shapes do tell (dim, depth, mlp_dim,
// num_classes, image_size) are checked against them when given.
struct VitPytorchOptions {
  std::optional<int> heads, dimHead, patchSize, channels, imageSize;
  std::optional<int> dim, depth, mlpDim, numClasses;
  std::optional<std::string> pool;       // "cls" (default) or "mean"
  std::optional<std::string> attention;  // e.g. "sinkhorn:T=3,eps=1" (Sinkformer's max_iter is T); default softmax
  std::optional<double> layerNormEps;    // default 1e-5 (nn.LayerNorm)
  std::vector<std::string> labels;       // default LABEL_0, LABEL_1, ...
  std::optional<std::vector<double>> imageMean, imageStd;
};

// The side file is a JSON object with the keys heads, dim_head, patch_size, channels, image_size, dim,
// depth, mlp_dim, num_classes, pool, attention, layer_norm_eps, labels, image_mean, image_std (all
// optional). FileError naming the file and the field.
VitPytorchOptions readVitPytorchSideFile(const std::string& path);
// Each option of `primary`, or `fallback`'s where `primary` has none.
VitPytorchOptions mergeOptions(const VitPytorchOptions& primary, const VitPytorchOptions& fallback);

// True when the names are vit-pytorch's (to_patch_embedding.*, transformer.layers.*, mlp_head.*).
bool isVitPytorchLayout(const TensorMap& tensors);
bool isVitPytorchLayout(const StoredTensorMap& tensors);

// Converts a vit-pytorch state dict into HF names with the config it implies. FileError naming `source`
// and what is missing (an option or a tensor), unexpected, or of the wrong shape.
VitCheckpoint convertVitPytorch(const TensorMap& stateDict, const VitPytorchOptions& options, const std::string& source);

}  // namespace tl
