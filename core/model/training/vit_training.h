#pragma once
// The LibTorch pieces of training a ViT: mini-batch tensors from Fashion-MNIST bytes, one AdamW step,
// ESP's annealed SoftSort while training, batched evaluation, and the optimiser state as bytes for the
// resumable checkpoint. training_run.h strings them into a run behind plain types.
// This header includes LibTorch: only model/ sources and torch-labelled tests include it.
#include <torch/torch.h>

#include <optional>
#include <string>
#include <vector>

#include "common/feedback.h"
#include "data/fashion_mnist.h"
#include "data/random.h"
#include "model/vit.h"

namespace tl {

// Sets LibTorch's intra-op thread count (0 = every hardware thread) and returns it. Results are
// reproducible for a fixed count only: reductions and matrix products split their work by thread.
int useTorchThreads(int requested);

// Images `indices` of `split` as the model's input [B, 1, 28, 28]: each randomly cropped (2-px padding) and
// flipped when `augment` is given, rescaled to [0, 1] and normalised with the config's image_mean/image_std
// (normaliseImage, the same code inference uses).
torch::Tensor batchPixels(const VitConfig& config, const FashionMnistSplit& split, const std::vector<int64_t>& indices,
                          SeededRandom* augment);
torch::Tensor batchLabels(const FashionMnistSplit& split, const std::vector<int64_t>& indices);  // int64 [B]

// The attention a training forward pass uses in place of the model's own normaliser, or none. ESP trains
// with SoftSort at `sortTemp` (the spec's sort_temp annealed per epoch, docs/operators/esp.md#training); its
// slices come from the spec, so they are the model's own. Other families train with their own normaliser.
std::optional<AttentionOverride> trainingAttention(const VitConfig& config, double sortTemp);

struct StepResult {
  double loss = 0;      // mean over the batch
  int64_t correct = 0;  // argmax hits, from the logits before the update
};

// AdamW over a model's parameters, decoupled weight decay on the weight matrices only: biases, LayerNorm
// scales, [CLS], position embeddings and LOT pivots are not pulled towards zero (they have no scale
// symmetry that decay would regularise).
class VitTrainer {
 public:
  VitTrainer(VitModel model, double weightDecay, double labelSmoothing);

  // One optimiser step at learning rate `lr`; `attention` replaces every layer's normaliser when given.
  // Batches whose attention tensors would be large (ESP's per-slice plans) run as several forward/backward
  // passes with accumulated gradients: the same update, up to summation order.
  StepResult step(const torch::Tensor& pixels, const torch::Tensor& labels, double lr,
                  const AttentionOverride* attention = nullptr);

  std::string optimizerState() const;  // torch::save archive bytes
  void loadOptimizerState(const std::string& bytes, const std::string& source);  // FileError naming source

  VitModel& model() { return model_; }

 private:
  torch::Tensor forward(const torch::Tensor& pixels, const AttentionOverride* attention);

  VitModel model_;
  double labelSmoothing_;
  int64_t chunk_;  // images per forward pass
  torch::optim::AdamW optimizer_;
};

struct AccuracyCount {
  int64_t correct = 0, total = 0;
  std::vector<std::vector<int64_t>> confusion;  // [true class][predicted class]
  double fraction() const { return total > 0 ? double(correct) / double(total) : 0.0; }
};

// The first `limit` images of `split` (0 = all) in eval mode without gradients, `batch` at a time or fewer
// where attention tensors would be large (ESP sorts hard unless its spec says soft). Restores the model's training mode. Cancelled through `feedback`.
AccuracyCount evaluateAccuracy(VitModel& model, const FashionMnistSplit& split, int limit, int batch,
                               Feedback& feedback = noFeedback());

}  // namespace tl
