#pragma once
// The paper's App. G control (docs/operators/rank-decay.md#random-matrices): no network; i.i.d. N(0, s²)
// score matrices normalised by the operator, and σ₂/σ₁ of products of t of them. The skip mimic replaces
// ⌊t/2⌋ factors, chosen uniformly, by the identity.
#include "common/feedback.h"
#include "ops/operator.h"
#include "rankdecay/path_sampler.h"

namespace tl::rankdecay {

struct RandomMatrixSpec {
  int n = 50;
  double s = 1;       // standard deviation of the scores
  int depth = 24;     // largest t
  bool skip = false;  // skip mimic
};

// Per path: the identity positions (skip mimic), then the scores of the remaining factors, row by row.
// The same seed gives every operator the same score matrices. Order literal/network as for recorded paths.
std::vector<DepthSummary> randomMatrixPaths(const Operator& op, const RandomMatrixSpec& spec,
                                            const PathOptions& options, Feedback& feedback);

}  // namespace tl::rankdecay
