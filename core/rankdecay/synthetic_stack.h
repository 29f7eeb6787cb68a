#pragma once
// Synthetic multi-head attention stacks with random weights (docs/operators/rank-decay.md#synthetic-stacks):
// the theory's setting, with the four block configurations and optional LayerNorm. One seed draws one
// network and one input; B seeds give B samples, each with fresh weights.
#include <cstdint>

#include "common/feedback.h"
#include "ops/operator.h"
#include "rankdecay/attention_record.h"
#include "rankdecay/configuration.h"
#include "rankdecay/theory.h"

namespace tl::rankdecay {

enum class LayerNormPlace { None, Pre, Post };
LayerNormPlace parseLayerNorm(const std::string& name);  // none | pre | post

struct StackSpec {
  int n = 32;          // tokens
  int width = 64;      // model width (the source's `d`); head dimension width/heads
  int heads = 4;
  int layers = 12;
  double scale = 1;    // multiplies every score matrix (near-uniform ↔ peaked attention)
  LayerNormPlace layerNorm = LayerNormPlace::None;
  BlockConfig config = BlockConfig::San;
  SkipScope skipScope = SkipScope::All;
};

void validate(const StackSpec& spec);  // InvalidArgument naming the parameter

struct StackRun {
  AttentionRecord record;                 // samples = seeds
  std::vector<SampleTheoryInputs> theory;  // one per seed; layers and bounds only for pure SAN without LayerNorm
};

// Seeds seed, seed+1, …, seed+seeds−1. Draw order per seed (fixed, so every configuration of one seed shares
// its weights and input): X = 1μᵀ + G (μ ~ N(0, 4 I), G ~ N(0, 1)); then per layer, per head W_Q, W_K, W_V
// (N(0, 1/width)), then W_O (N(0, 1/width)), then the FFN's W1 (N(0, 2/width), width × 4·width) and W2
// (N(0, 1/(4·width))), taken from the stream whether or not the configuration uses them (skipped without the
// Gaussian transform when unused).
StackRun runSyntheticStack(const Operator& op, const StackSpec& spec, uint64_t seed, int seeds, Feedback& feedback);

}  // namespace tl::rankdecay
