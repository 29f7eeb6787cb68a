#pragma once
// Any registered operator used as the attention normaliser of a rank-decay source: it receives the
// unscaled queries and keys of one head (docs/conventions.md#scores) and returns its dense attention-scale
// plan with the marginal errors it reports. Float64, CPU reference path.
#include "common/feedback.h"
#include "common/matrix.h"
#include "ops/operator.h"

namespace tl::rankdecay {

struct NormalisedAttention {
  MatD plan;
  MarginalErrors errors;
};

NormalisedAttention normalise(const Operator& op, const MatD& Q, const MatD& K, Feedback& feedback);

// A given score matrix S (n × n) as the operator's input: Q = √n·S and K = I_n (head dimension n), so that
// QKᵀ/√n = S exactly. Dot-product families (softmax, sinkhorn, banded, asap, diff) normalise S itself;
// geometry families (esp's distances, lot's pivots) see the points q_i = √n·S_i and k_j = e_j.
NormalisedAttention normaliseScores(const Operator& op, const MatD& S, Feedback& feedback);

}  // namespace tl::rankdecay
