#pragma once
// Test accuracy of a ViT checkpoint on Fashion-MNIST (what `tlens train` reports after every epoch, and what
// `tlens eval` reports for any checkpoint): batched, eval mode (ESP sorts hard unless its spec says soft),
// no gradients. Plain std types only, so the CLI includes it without LibTorch.
#include <cstdint>
#include <vector>

#include "common/feedback.h"
#include "vit/vit_checkpoint.h"

namespace tl {

struct EvaluationOptions {
  int limit = 0;    // first N test images; 0 = all 10000
  int batch = 500;
  int threads = 1;  // LibTorch intra-op threads (0 = every hardware thread); see TrainingOptions::threads
};

struct FashionMnistAccuracy {
  int64_t images = 0, correct = 0;
  double accuracy = 0;  // correct / images
  double seconds = 0;
  std::vector<std::vector<int64_t>> confusion;  // [true class][predicted class], classes in label order
};

// InvalidArgument when the model does not take 28×28 greyscale images or has other than 10 labels;
// FileError when the data files are missing.
FashionMnistAccuracy evaluateOnFashionMnist(const VitCheckpoint& checkpoint, const EvaluationOptions& options = {},
                                            Feedback& feedback = noFeedback());

}  // namespace tl
