#include "rankdecay/normaliser.h"

#include <cmath>

namespace tl::rankdecay {

NormalisedAttention normalise(const Operator& op, const MatD& Q, const MatD& K, Feedback& feedback) {
  AttentionInput<double> input;
  input.Q = Q;
  input.K = K;
  const PlanResult<double> result = op.run(input, feedback);
  return {result.plan.dense(), result.errors};
}

NormalisedAttention normaliseScores(const Operator& op, const MatD& S, Feedback& feedback) {
  const Eigen::Index n = S.rows();
  return normalise(op, std::sqrt(double(n)) * S, MatD::Identity(n, n), feedback);
}

}  // namespace tl::rankdecay
