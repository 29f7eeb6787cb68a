#pragma once
// Rank decay along attention paths (docs/operators/rank-decay.md#paths): products of t attention matrices
// from t distinct layers, and σ₂/σ₁ of each product, in float64.
#include <cstdint>
#include <vector>

#include "common/feedback.h"
#include "data/random.h"
#include "rankdecay/attention_record.h"
#include "rankdecay/box_summary.h"

namespace tl::rankdecay {

// literal: P^{ℓ1} P^{ℓ2} ⋯ P^{ℓt} with ℓ1 < … < ℓt (the paper's and Dong et al.'s order);
// network: P^{ℓt} ⋯ P^{ℓ1}, the order in which the network composes its layers.
enum class ProductOrder { Literal, Network };

struct PathOptions {
  int paths = 100;              // sampled per depth
  ProductOrder order = ProductOrder::Literal;
  bool samplePerLayer = false;  // a sample b per factor instead of one per path (equal-length samples only)
  uint64_t seed = 0;
};

// One depth t: the summary of σ₂/σ₁ over the sampled paths and every sampled value.
struct DepthSummary {
  int t = 0;
  BoxSummary box;
  std::vector<double> values;
  // Largest row or column marginal error among the factors sampled at this depth: the doubly stochastic
  // identities (σ₁ = 1, σ₂ of a product ≤ the product of σ₂) hold only where this is at rounding level.
  double factorMarginalError = 0;
};

// A path: t distinct layers in increasing order, a sample b per path (or per factor), a head per factor.
struct SampledPath {
  std::vector<int> layers, samples, heads;
};

// Draws in a fixed order so that a seed gives the same paths everywhere: the layers (a partial
// Fisher–Yates shuffle of 0 … L−1, then sorted), then the sample(s), then one head per factor.
SampledPath samplePath(SeededRandom& rng, int t, int layers, int samples, int heads, bool samplePerLayer);

// Product of the path's factors in the requested order.
MatD pathProduct(const AttentionRecord& record, const SampledPath& path, ProductOrder order);

// Every depth t = 1 … record.layers; progress per depth, cancellable between paths.
std::vector<DepthSummary> sampleAttentionPaths(const AttentionRecord& record, const PathOptions& options,
                                               Feedback& feedback);

// A uniform integer in [0, count) from one draw of the generator.
int uniformIndex(SeededRandom& rng, int count);

// `count` distinct values of 0 … range−1, in increasing order.
std::vector<int> distinctSorted(SeededRandom& rng, int count, int range);

}  // namespace tl::rankdecay
