#pragma once
// Fitting instances from a Sinkhorn teacher, shared by the ASAP fitting tests.
#include <optional>

#include "ops/asap/asap_fit.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "support/test_util.h"

namespace tl::test {

// A column-ending teacher's closure-ready dual on seeded Gaussian Q, K: its final u
// (docs/operators/asap.md#teacher-duals).
inline FitInstance teacherInstance(int n, int d, uint64_t seed, double eps, int T = 4, std::optional<Mask> mask = {},
                                   MaskMode mode = MaskMode::Subsequence) {
  AttentionInput<double> in;
  in.Q = gaussian(n, d, seed);
  in.K = gaussian(n, d, seed + 1);
  in.mask = mask;
  SinkhornParams p;
  p.T = T;
  p.eps = eps;
  p.maskMode = mode;
  return {in.Q, in.K, sinkhornAttention(in, p).u, mask};
}

}  // namespace tl::test
