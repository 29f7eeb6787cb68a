#pragma once
// What a ViT run shows inside: per layer the normaliser that ran, per head Q, K, V and the attention plan,
// the block outputs and the logits. Plain std/Eigen types (no LibTorch), so sources, sessions and views use
// them in builds without the model layer too.
#include <optional>
#include <vector>

#include "common/attention_input.h"
#include "ops/plan_result.h"
#include "ops/registry.h"

namespace tl {

struct VitHeadTrace {
  AttentionInput<double> input;  // Q, K, V (n×d, n = 1 + patches, [CLS] first), no mask
  MatD attention;                // attention-scale plan A (rows = queries, sum to 1) the block used
  MatD output;                   // A·V, n×d
  std::optional<PlanResult<double>> core;  // the core operator's full result (duals, errors, extras) when swapped
};

struct VitLayerTrace {
  OperatorSpec op;  // the normaliser that ran
  bool swapped = false;  // true when `op` ran through the core operator
  std::vector<VitHeadTrace> heads;
  MatD output;  // hidden state after the block, n×hidden_size
};

struct VitTrace {
  MatD embeddings;  // hidden state entering layer 0, n×hidden_size
  std::vector<VitLayerTrace> layers;
  VecD logits;
  int predicted() const {  // index of the largest logit
    Eigen::Index best = 0;
    if (logits.size()) logits.maxCoeff(&best);
    return int(best);
  }
};

}  // namespace tl
