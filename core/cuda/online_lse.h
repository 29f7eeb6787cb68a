#pragma once
// The online log-sum-exp (FlashAttention's "softmax" state, used here for every Sinkhorn half-step): a
// running maximum m and a running sum s = Σ exp(x − m) over the terms seen, so LSE = m + log s. Terms arrive
// tile by tile (addTile) and partial states from other threads or key splits combine with merge.
//
// −inf terms are masked scores (inactive keys, padding): they add nothing. If every term so far was −inf the
// state stays (m = −inf, s = 0) and finalize() gives −inf, never NaN: no expression below ever evaluates
// (−inf) − (−inf) (docs/conventions.md#log-domain).
#include "cuda/host_device.h"

namespace tl::cuda {

struct OnlineLse {
  float m = negInf();  // running max; −inf while every term seen was −inf
  float s = 0.f;       // Σ exp(x − m)

  // One term.
  TL_HOST_DEVICE TL_FORCE_INLINE void add(float x) {
    if (isNegInf(x)) return;
    if (x > m) {
      s = s * expF(m - x) + 1.f;  // m = −inf: expF(−inf) = 0 and s was 0
      m = x;
    } else {
      s += expF(x - m);  // m is finite here (x > −inf and m ≥ x)
    }
  }

  // N terms at once: one rescale per tile instead of one per term.
  template <int N>
  TL_HOST_DEVICE TL_FORCE_INLINE void addTile(const float (&x)[N]) {
    float tileMax = x[0];
    TL_UNROLL
    for (int c = 1; c < N; ++c) tileMax = maxF(tileMax, x[c]);
    // If the tile max is -inf, every term is -inf: nothing to add, and we must not form x − (−inf).
    if (isNegInf(tileMax)) return;
    if (tileMax > m) {
      s *= expF(m - tileMax);  // m = −inf: expF(−inf) = 0 and s was 0
      m = tileMax;
    }
    TL_UNROLL
    for (int c = 0; c < N; ++c) s += expF(x[c] - m);  // m finite; −inf terms give exactly 0
  }

  // Combines two partial states over disjoint term sets.
  TL_HOST_DEVICE TL_FORCE_INLINE void merge(const OnlineLse& o) {
    if (isNegInf(o.m)) return;  // o saw only −inf terms
    if (isNegInf(m)) {
      m = o.m;
      s = o.s;
      return;
    }
    const float mNew = maxF(m, o.m);
    s = s * expF(m - mNew) + o.s * expF(o.m - mNew);
    m = mNew;
  }

  // log Σ exp(x) over every term seen; −inf when there was none (or all were −inf).
  TL_HOST_DEVICE TL_FORCE_INLINE float finalize() const { return isNegInf(m) ? negInf() : m + logF(s); }
};

// FlashAttention's guard: a running max of −inf means every term was −inf; use 0 instead so that
// exp(x − max) is exp(−inf) = 0 rather than NaN.
TL_HOST_DEVICE TL_FORCE_INLINE float safeMax(float m) { return isNegInf(m) ? 0.f : m; }

}  // namespace tl::cuda
