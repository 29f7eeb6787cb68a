#pragma once
// Random matrices for the rank-decay tests, drawn from the seeded generator the stacks use.
#include "common/matrix.h"
#include "data/random.h"
#include "ops/registry.h"

namespace tl::rankdecay {

// rows × cols entries ~ N(0, sd²), drawn in storage order from `rng`.
inline MatD gaussian(SeededRandom& rng, int rows, int cols, double sd = 1) {
  MatD M(rows, cols);
  for (Eigen::Index i = 0; i < M.size(); ++i) M.data()[i] = sd * rng.normal();
  return M;
}

// The operator a spec string names ("sinkhorn:T=20"), from the built-in registry.
inline std::unique_ptr<Operator> makeOperator(const std::string& spec) {
  return OperatorRegistry::builtin().create(OperatorRegistry::builtin().parse(spec));
}

}  // namespace tl::rankdecay
