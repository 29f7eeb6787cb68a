#pragma once
// Rank decay of the layer outputs (docs/operators/rank-decay.md#outputs) and, per layer, what the attention
// matrices themselves look like: marginal errors (a finite budget is not doubly stochastic), row entropy
// and effective rank.
#include <vector>

#include "common/feedback.h"
#include "rankdecay/attention_record.h"
#include "rankdecay/box_summary.h"

namespace tl::rankdecay {

// One layer ℓ (0 = the input) over the B samples.
struct LayerSummary {
  int layer = 0;
  double median = 0, mean = 0, std = 0;  // of ρ_out = ‖res(X_ℓ)‖₂/‖X_ℓ‖₂
  MeanStd log10Rho;                      // mean ± std of log10 ρ_out, for bands on a log axis
  double resMedian = 0;                  // median of ‖res(X_ℓ)‖₂ (absolute)
  std::vector<double> rho, res;          // per sample
};

std::vector<LayerSummary> outputStatistics(const AttentionRecord& record, Feedback& feedback);

// One layer ℓ = 1 … L over its heads and samples.
struct AttentionLayerStats {
  int layer = 0;
  double rowErrorMax = 0, colErrorMax = 0;  // largest marginal errors the operator reported
  double entropy = 0;                       // mean row entropy / log n ∈ [0, 1]
  double effectiveRank = 0;                 // mean Roy–Vetterli effective rank
};

std::vector<AttentionLayerStats> attentionStatistics(const AttentionRecord& record, Feedback& feedback);

}  // namespace tl::rankdecay
