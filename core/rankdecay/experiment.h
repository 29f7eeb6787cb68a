#pragma once
// One rank-decay run (docs/operators/rank-decay.md): a source, one or more operators as the attention
// normaliser, a block configuration; per operator the path curves (σ₂/σ₁ per depth), the output curves
// (ρ_out per layer), the attention diagnostics per layer and the theory curves where they apply. The CLI
// (`tlens rank-decay`), the Session and the GUI's Rank decay view all run this.
#include <functional>
#include <string>
#include <vector>

#include "common/feedback.h"
#include "ops/registry.h"
#include "rankdecay/layer_statistics.h"
#include "rankdecay/path_sampler.h"
#include "rankdecay/source.h"

namespace tl::rankdecay {

struct RankDecayRequest {
  RankDecaySource source;
  std::vector<OperatorSpec> operators;
  BlockConfig config = BlockConfig::San;
  PathOptions paths;  // its seed is also the first network seed of a stack
  int seeds = 20;     // stack: networks (samples B)
  bool wantPaths = true, wantOutputs = true;
};

// A theory curve as drawn: log10 of its median over the samples at ℓ = 0 … L, with its label, and, when its
// assumptions do not hold, the reason it is greyed out.
struct TheoryCurve {
  std::string name;   // printed | linearised | rigorous | data
  std::string label;  // shown beside the curve
  bool applies = true;
  std::string reason;  // why it does not apply (empty when it does)
  std::vector<double> log10;
  // rigorous: its local variant (one step from the measured X_{ℓ−1}), log10 of the median over the samples at
  // ℓ = 0 … L (ℓ = 0 is r_0), drawn as markers; empty for the other curves.
  std::vector<double> localLog10;
  double vacuousFraction = 0;  // printed and linearised: share of samples with √c·r_0 ≥ 1
  int validLayers = 0;         // linearised: layers before the first max|A| > 0.3 (median sample)
};

struct OperatorCurves {
  OperatorSpec op;
  std::vector<DepthSummary> paths;
  std::vector<LayerSummary> outputs;
  std::vector<AttentionLayerStats> attention;
  std::vector<TheoryCurve> theory;  // stack sources only
};

struct RankDecayResult {
  RankDecayRequest request;
  std::vector<OperatorCurves> operators;
};

// Throws InvalidArgument for requests that cannot be run (outputs of random matrices, unknown families),
// Canceled when feedback is cancelled.
RankDecayResult runRankDecay(const RankDecayRequest& request, Feedback& feedback);

// The theory curves of one operator on a stack run (exposed for tests).
std::vector<TheoryCurve> theoryCurves(const std::vector<SampleTheoryInputs>& samples, const OperatorSpec& op,
                                      const StackSpec& spec, double largestMarginalError);

// Checkpoint sources are recorded by the model layer (LibTorch), which installs itself here; `op` is null
// to keep each layer's trained normaliser. Without it, model sources answer that LibTorch is missing.
using ModelRecorder = std::function<AttentionRecord(const RankDecaySource& source, const OperatorSpec* op,
                                                    BlockConfig config, SkipScope scope, Feedback& feedback)>;
void installModelRecorder(ModelRecorder recorder);

// The --op text that keeps a checkpoint's trained normaliser.
inline constexpr const char* kTrainedOperator = "trained";
// "sinkhorn:T=50,eps=1,mask_mode=subsequence", or "trained" for a checkpoint's own normaliser.
std::string operatorLabel(const OperatorSpec& op);

}  // namespace tl::rankdecay
