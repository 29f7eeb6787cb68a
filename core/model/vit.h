#pragma once
// The Vision Transformer in LibTorch (Hugging Face ViTForImageClassification, pre-norm blocks), with the
// attention normaliser pluggable per torch_normalisers.h:
//   patches (stride-p convolution) → [CLS] + patches + learned positions → L × {x += Attn(LN(x));
//   x += MLP_GELU(LN(x))} → LN → classifier on [CLS] (or on the token mean, vit-pytorch pool='mean').
// Submodules carry HF's names, so named_parameters() are exactly the checkpoint names of weight_names.h.
// For training: forward(batch) → logits with autograd, parameters() for the optimiser, train()/eval()
// (ESP uses SoftSort while training); weights are drawn from torch's generator (torch::manual_seed).
// This header includes LibTorch: only model/ sources and torch-labelled tests include it.
#include <torch/torch.h>

#include <functional>

#include "common/feedback.h"
#include "model/normalisers/torch_normalisers.h"
#include "rankdecay/configuration.h"
#include "vit/vit_checkpoint.h"

namespace tl {

// What one block's attention saw and produced, all per head.
struct VitAttentionTrace {
  torch::Tensor q, k, v;    // [B, H, n, d] after projection, unscaled (S = QKᵀ/√d is the operators' own step)
  torch::Tensor attention;  // [B, H, n, n] attention scale (rows sum to 1)
  torch::Tensor output;     // [B, H, n, d] = A V, before the output projection
};

// Mixes one block's heads in place of its normaliser: q, k, v [B, H, n, d] → output and attention.
using AttentionOverride =
    std::function<TorchAttention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v)>;

class VitLayerImpl : public torch::nn::Module {
 public:
  explicit VitLayerImpl(const VitConfig& config);
  // hidden [B, n, D] → [B, n, D]. `trace` (optional) receives the attention's inputs and outputs;
  // `override` (optional) replaces the normaliser; `block` (optional, rank decay's configurations) removes
  // the skips or bypasses the FFN together with its LayerNorm at inference (docs/operators/rank-decay.md).
  torch::Tensor forward(const torch::Tensor& hidden, VitAttentionTrace* trace = nullptr,
                        const AttentionOverride* override = nullptr,
                        const rankdecay::BlockSwitches* block = nullptr);
  const TorchNormaliser& normaliser() const { return normaliser_; }

 private:
  torch::Tensor heads(const torch::Tensor& x) const;  // [B, n, H·d] → [B, H, n, d]

  int numHeads_, headDim_;
  bool tanhGelu_;
  torch::nn::LayerNorm layernormBefore_{nullptr}, layernormAfter_{nullptr};
  torch::nn::Linear query_{nullptr}, key_{nullptr}, value_{nullptr}, attentionDense_{nullptr};
  torch::nn::Linear intermediate_{nullptr}, outputDense_{nullptr};
  TorchNormaliser normaliser_;
};
TORCH_MODULE(VitLayer);

// How a new model's weights start: drawn as HF's _init_weights draws them (for training), or left as the
// modules' own cheap default because a checkpoint overwrites every parameter next (86M normal draws cost
// about a second, as long as reading a ViT-B's bytes).
enum class VitWeightsStart { Random, FromCheckpoint };

class VitModelImpl : public torch::nn::Module {
 public:
  explicit VitModelImpl(VitConfig config, VitWeightsStart start = VitWeightsStart::Random);
  const VitConfig& config() const { return config_; }

  // Normalised pixels [B, C, H, W] → logits [B, num_labels].
  torch::Tensor forward(const torch::Tensor& pixels);

  // The pieces of forward(), for extraction and partial re-runs.
  torch::Tensor embed(const torch::Tensor& pixels);  // → hidden [B, n, D] entering layer 0
  VitLayer& layer(int index) { return layers_.at(size_t(index)); }
  torch::Tensor classify(const torch::Tensor& hidden);  // final LayerNorm and classifier

  // Every parameter by HF name (float32). load() checks names and shapes first (checkVitTensors) and
  // throws FileError naming `source` and the tensor.
  TensorMap state() const;
  void load(const TensorMap& tensors, const std::string& source);
  // Decodes each stored tensor straight into its parameter's storage (no staging copy), reporting progress by
  // elements and polling `feedback` for cancellation between tensors.
  void load(const StoredTensorMap& tensors, const std::string& source, Feedback& feedback);

 private:
  VitConfig config_;
  torch::nn::Conv2d projection_{nullptr};
  torch::Tensor clsToken_, positions_;
  std::vector<VitLayer> layers_;
  torch::nn::LayerNorm layernorm_{nullptr};
  torch::nn::Linear classifier_{nullptr};
};
TORCH_MODULE(VitModel);

// A model with the checkpoint's config and weights (eval mode), and the checkpoint of a model.
VitModel makeVitModel(const VitCheckpoint& checkpoint, const std::string& source);
VitModel makeVitModel(const VitCheckpointFile& checkpoint, const std::string& source, Feedback& feedback);
VitCheckpoint checkpointOf(const VitModel& model);

}  // namespace tl
