#pragma once
// Inputs and parameters shared by the banded gradient and certificate tests.
#include "ops/banded/banded.h"
#include "support/test_util.h"

namespace tl::test {

// Q, K ~ N(0, 1) (n_q × d, n_k × d) and V (n_k × d_v) from seeds seed, seed + 1, seed + 2.
inline AttentionInput<double> bandedInput(int nq, int nk, int d, int dv, uint64_t seed) {
  AttentionInput<double> in;
  in.Q = gaussian(nq, d, seed);
  in.K = gaussian(nk, d, seed + 1);
  in.V = gaussian(nk, dv, seed + 2);
  return in;
}

inline BandedParams bandedParams(int W, int base, int tail, double eps = 1.0, bool dustbin = false) {
  BandedParams p;
  p.W = W;
  p.baseSteps = base;
  p.tailSteps = tail;
  p.eps = eps;
  p.dustbin = dustbin;
  return p;
}

inline double maxAbs(const MatD& m) { return m.cwiseAbs().maxCoeff(); }

}  // namespace tl::test
