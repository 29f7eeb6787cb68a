#pragma once
// What a rank-decay source records from one forward pass per sample: the attention matrices Ps[L, B, H]
// (attention scale, float64) and the layer outputs Xs[B, L+1] (ℓ = 0 is the input). Synthetic stacks,
// checkpoints and anything else that can run a network fill the same record, so the path sampler and the
// output statistics never know where the matrices came from.
#include <vector>

#include "common/matrix.h"
#include "ops/plan_result.h"

namespace tl::rankdecay {

struct AttentionRecord {
  int layers = 0, samples = 0, heads = 0;
  // attention[(layer · samples + sample) · heads + head], each n_b × n_b (n_b may differ between samples).
  std::vector<MatD> attention;
  // The marginal errors each operator reported for the matrix at the same index.
  std::vector<MarginalErrors> errors;
  // outputs[sample][ℓ] for ℓ = 0 … layers; empty for sources without a network (random matrices).
  std::vector<std::vector<MatD>> outputs;

  static AttentionRecord sized(int layers, int samples, int heads);
  size_t index(int layer, int sample, int head) const { return (size_t(layer) * samples + sample) * heads + head; }
  const MatD& at(int layer, int sample, int head) const { return attention[index(layer, sample, head)]; }
};

}  // namespace tl::rankdecay
