#pragma once
// The configuration of a Vision Transformer as TransportLens stores it: a Hugging Face ViTConfig
// config.json (so `transformers` can read the file) plus one "transportlens" block for what HF cannot say:
//   "transportlens": {
//     "attention": "sinkhorn:T=5,eps=1",   // the normaliser, in the registry's "family:key=value" syntax
//     "head_dim": 16,                      // optional; default hidden_size / num_attention_heads
//     "pool": "cls",                       // optional; "cls" (HF) or "mean" (vit-pytorch pool='mean')
//     "image_mean": [0.5], "image_std": [0.5]  // optional per-channel pixel normalisation
//   }
// A plain HF config without the block is a softmax ViT. No LibTorch here: the CLI and GUI read configs too.
#include <string>
#include <vector>

#include "ops/registry.h"

namespace tl {

enum class VitPooling { Cls, Mean };

// What HF's ViTImageProcessor does after rescaling pixels to [0, 1]: x' = (x − mean_c)/std_c per channel.
struct ImageNormalisation {
  std::vector<double> mean, std;  // one entry per channel (a single entry applies to every channel)
};

struct VitConfig {
  int hiddenSize = 0;
  int numLayers = 0;
  int numHeads = 0;
  int headDim = 0;  // per-head width; heads·headDim is the width of Q, K and V
  int intermediateSize = 0;
  int imageSize = 0;  // square images
  int patchSize = 0;
  int numChannels = 3;
  double layerNormEps = 1e-12;  // HF's default; vit-pytorch (nn.LayerNorm) uses 1e-5
  std::string hiddenAct = "gelu";  // gelu (exact, erf) or gelu_new / gelu_pytorch_tanh (tanh approximation)
  bool qkvBias = true;
  std::vector<std::string> labels;  // id2label in index order; its size is num_labels
  OperatorSpec attention;           // the model's own normaliser
  VitPooling pool = VitPooling::Cls;
  ImageNormalisation normalisation{{0.5}, {0.5}};  // ViTImageProcessor's defaults

  int numLabels() const { return int(labels.size()); }
  int gridSize() const { return imageSize / patchSize; }
  int numPatches() const { return gridSize() * gridSize(); }
  int numTokens() const { return numPatches() + 1; }  // [CLS] first
  int innerSize() const { return numHeads * headDim; }
};

// Parses config.json text; `normalisation` applies when the transportlens block gives no image_mean/std.
// Throws FileError naming `source` and the missing or invalid field.
VitConfig parseVitConfig(const std::string& text, const std::string& source,
                         const ImageNormalisation& normalisation = ImageNormalisation{{0.5}, {0.5}});
VitConfig readVitConfig(const std::string& path);

// HF's names for unnamed labels: LABEL_0, LABEL_1, ...
std::vector<std::string> defaultVitLabels(int n);

// config.json text: the HF ViTConfig fields (model_type "vit", ViTForImageClassification) plus the block.
std::string vitConfigJson(const VitConfig& config);

// Checks sizes and their consistency (patch divides image, heads·head_dim, labels); FileError naming `source`.
void validateVitConfig(const VitConfig& config, const std::string& source);

// Pixels in [0, 1], C×H×W row-major → normalised pixels (InvalidArgument when the shape is not C×H×W of
// this config or a value is not finite).
std::vector<float> normaliseImage(const VitConfig& config, const std::vector<int64_t>& shape,
                                  const std::vector<float>& pixels);

}  // namespace tl
