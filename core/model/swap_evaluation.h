#pragma once
// A checkpoint's accuracy on a Fashion-MNIST split and, with a swap, the papers' plug-and-play experiment:
// the same trained weights with another normaliser (a core registry operator, CPU, double) at chosen layers.
// What `tlens eval` prints and writes: the model's own accuracy and throughput; with the swap, the swapped
// accuracy, the agreement of the two predictions, and per layer how far the block outputs (RMS of the
// difference) and the attention plans (relative Frobenius distance, mean over heads) move, averaged over
// the images. Plain std/Eigen types (no LibTorch), so the CLI and the GUI include it.
#include <optional>
#include <vector>

#include "common/feedback.h"
#include "data/fashion_mnist.h"
#include "model/vit_inference.h"
#include "ops/registry.h"

namespace tl {

struct SwapEvaluationOptions {
  FashionMnistPart split = FashionMnistPart::Test;
  int limit = 0;                     // the first N images of the split; 0 = all
  std::optional<OperatorSpec> swap;  // none: the model's own accuracy only (a fast forward pass per image)
  std::vector<int> layers;           // layers that get the swap; empty = every layer
};

struct LayerShift {
  int layer = 0;
  bool swapped = false;          // the swap ran here (later layers change only through their inputs)
  double outputRmse = 0;         // mean over images of rmsDifference(swapped block output, original)
  double attentionDistance = 0;  // mean over images and heads of relativeFrobenius(A_swapped, A_original)
};

struct SwapEvaluation {
  std::string op;  // the model's own normaliser, resolved ("softmax:mask_mode=subsequence")
  int images = 0;
  int correct = 0;  // argmax hits of the model as trained
  double seconds = 0;  // the image loop (the split is read before it)
  // With a swap:
  std::optional<OperatorSpec> swap;
  std::vector<int> swappedLayers;  // ascending
  int swappedCorrect = 0;
  int agreeing = 0;                // images whose swapped prediction equals the original one
  std::vector<LayerShift> layers;  // every layer of the model, in order

  double accuracy() const { return double(correct) / images; }
  double swappedAccuracy() const { return double(swappedCorrect) / images; }
  double agreement() const { return double(agreeing) / images; }
  double imagesPerSecond() const { return images / seconds; }
};

// Runs the first options.limit images of the split through `runner` (and, with a swap, again from the first
// swapped layer on with the swap in place). Reports "image i/N" through `feedback` after every image and
// throws Canceled when it is cancelled (checked per image and inside the model runs). InvalidArgument for a
// layer out of range or a swap the operator refuses; FileError when the data files are missing.
SwapEvaluation evaluateSwap(const VitRunner& runner, const SwapEvaluationOptions& options,
                            Feedback& feedback = noFeedback());

}  // namespace tl
