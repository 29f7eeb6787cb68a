#pragma once
// Wall time of one training step of a LibTorch normaliser (forward and backward through its attention
// output), for `tlens bench --training`: the path training takes, next to the dense graph the same
// normaliser builds when asked for its attention matrix. For ESP that is the fused banded SoftSort output
// (model/esp_soft_output.h) against the [B, H, L, n, n] SoftSort graph; for the other families the two
// paths differ only in returning A, which is the point of comparison for them.
// No LibTorch in this header, so the command line can call it.
#include <vector>

#include "ops/registry.h"

namespace tl {

struct NormaliserStepShape {
  int batch = 128, heads = 4, tokens = 50, headDim = 16;  // the bundled checkpoints' attention
};

struct NormaliserStepTimes {
  std::vector<double> trainingPath;  // seconds per step, without the attention matrix
  std::vector<double> denseGraph;    // seconds per step, with it
};

// float32 q, k, v ~ N(0, 1) drawn from a fixed seed, loss Σ O ⊙ R for a fixed random R; one untimed
// warm-up step per path, then `repeats` timed ones of each, alternating. The normaliser trains (ESP sorts soft). Runs on
// LibTorch's current thread count. InvalidArgument for families without a LibTorch version.
NormaliserStepTimes timeNormaliserStep(const OperatorSpec& spec, const NormaliserStepShape& shape, int repeats);

// InvalidArgument naming the family unless it has a LibTorch version: lets a caller check every request
// before it starts timing.
void requireTrainable(const OperatorSpec& spec);

}  // namespace tl
