#pragma once
// The per-token arithmetic of one Sinkhorn half-step after its log-sum-exp (core/ops/sinkhorn/sinkhorn_loop.h, written
// once for the kernels and their CPU tests). Potentials are in eps units (ut = u/eps, vt = v/eps) and the
// attention plan is A_ij = scale · exp(x_ij + ut_i + vt_j), x = QKᵀ/(√d·eps).
#include "cuda/host_device.h"

namespace tl::cuda {

// Closure: potential = log marginal − LSE (the c-transform of the other side's potential). An inactive token
// (log marginal −inf) keeps −inf: it carries no mass, and −inf − LSE must not become NaN when LSE = −inf.
TL_HOST_DEVICE TL_FORCE_INLINE float closure(float logMarginal, float lse) {
  return isNegInf(logMarginal) ? negInf() : logMarginal - lse;
}

// Attention-scale sum of one plan row (or column) from its potential and the LSE over the other side:
// scale · exp(potential + lse); exactly 0 for an inactive token.
TL_HOST_DEVICE TL_FORCE_INLINE float marginalSum(float potential, float lse, float scale) {
  return isNegInf(potential) ? 0.f : scale * expF(potential + lse);
}

// Declared attention-scale target of a token: scale · exp(log marginal), 0 for an inactive token.
TL_HOST_DEVICE TL_FORCE_INLINE float marginalTarget(float logMarginal, float scale) {
  return isNegInf(logMarginal) ? 0.f : scale * expF(logMarginal);
}

// One plan entry A_ij = scale · exp((x + ut) + vt), in the CPU reference's order of additions
// (core/ops/score_geometry.cpp DenseScores::plan). −inf potentials give exactly 0 (x is always finite).
TL_HOST_DEVICE TL_FORCE_INLINE float planEntry(float x, float ut, float vt, float scale) {
  return scale * expF((x + ut) + vt);
}

// Max and mean of |sum − target| over one side (core/ops/marginals.h sideError): deviations in float, their
// max and sum in double, as the CPU reference does.
struct SideErrorAccumulator {
  double max = 0, sum = 0;
  TL_HOST_DEVICE TL_FORCE_INLINE void add(float sum_, float target) {
    const float dev = sum_ > target ? sum_ - target : target - sum_;
    const double d = double(dev);
    if (d > max || d != d) max = d;  // a NaN deviation must show, not vanish in the max
    sum += d;
  }
  TL_HOST_DEVICE TL_FORCE_INLINE void merge(const SideErrorAccumulator& o) {
    if (o.max > max || o.max != o.max) max = o.max;
    sum += o.sum;
  }
  TL_HOST_DEVICE TL_FORCE_INLINE double mean(long long count) const { return count > 0 ? sum / double(count) : 0.0; }
};

}  // namespace tl::cuda
