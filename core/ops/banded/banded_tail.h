#pragma once
// The pieces the banded backward pass and the bias certificate share (docs/operators/banded.md#gradients):
// the system the operator actually solves, the recorded iterates of its base and tail, and the pullback of
// the loss L = Σ G_ij O_ij through any run of those full steps. Internal to core/ops/banded.
//
// Coordinates are the paper's unit-target ones: P^(a,b) = exp(X + u^(a) ⊕ v^(b)) on the support, X = S/eps,
// so P^(t,t) is the attention-scale plan A itself. Inactive tokens carry potential −inf (exactly zero mass).
#include <memory>
#include <vector>

#include "common/attention_input.h"
#include "ops/banded/banded.h"
#include "ops/banded/banded_gradients.h"
#include "ops/score_geometry.h"

namespace tl::banded {

// The valid tokens (mask_mode=subsequence) with the dustbin token appended when asked
// (docs/operators/banded.md#dustbin), and the band scores on them.
template <class T>
struct System {
  Mat<T> Q, K, V, G;                   // V and G empty when the caller only needs scores
  std::vector<Eigen::Index> valid;     // original index of each real token (all of them without a mask)
  Eigen::Index realQueries = 0, realKeys = 0;  // tokens before the dustbin
  std::shared_ptr<const BandScores<T>> X;
  Mask rows, cols;  // active tokens
  T scoreScale;     // c_s = 1/(√d·eps): X = c_s·QKᵀ
};

// G (optional, n_q × d_v like the output) follows the same restriction; the dustbin query's output row is
// not part of the loss (zero cotangent).
template <class T>
System<T> makeSystem(const AttentionInput<T>& input, const BandedParams& params, const Mat<T>* G = nullptr);

// u[t], v[t] after full step t (t = 0: the start, v = 0 on active keys). m[t] is the centring shift
// applied at step t (0 for a raw step): the raw mixed plan is P^(t,t−1) = exp(m_t)·exp(X + u[t] ⊕ v[t−1])
// (the gauge ledger, docs/operators/banded.md#gradients), same-time plans need no factor.
template <class T>
struct Iterates {
  std::vector<Vec<T>> u, v;
  std::vector<T> m;
  int steps() const { return int(u.size()) - 1; }
};

template <class T>
Iterates<T> startIterates(const System<T>& sys);
// Appends `steps` full steps (row then column normalisation), each re-centred when `centred`.
template <class T>
void appendSteps(const System<T>& sys, Iterates<T>& it, int steps, bool centred);

// What a pullback returns. Gradients are on the system's tokens (dustbin included).
template <class T>
struct Pullback {
  Mat<T> dQ, dK, dV;
  Vec<T> gu, gv;          // (P ⊙ Z)1 and (P ⊙ Z)ᵀ1 at the output plan (output pullbacks only)
  Vec<T> etaU, etaV;      // cotangent left on (u[first], v[first]): η_R for the surrogate
};

// L = Σ G_ij O_ij with O = P^(last,last)·V, differentiated through steps (first, last] of `it`; the state
// at `first` is a constant. first = base_steps, last = base_steps + tail_steps is the surrogate;
// first = 0 is full backpropagation. The one-reference schedule needs last − first = 2.
template <class T>
Pullback<T> pullBackOutput(const System<T>& sys, const Iterates<T>& it, int first, int last,
                           BandedTailSchedule schedule = BandedTailSchedule::Direct);

// The VJP of the state after step `last` through steps (0, last], seeded with (seedU, seedV): the bias
// certificate's c_R = D_x z_Tᵀ η_R when seeded with η_R at last = base_steps. dV is zero.
template <class T>
Pullback<T> pullBackState(const System<T>& sys, const Iterates<T>& it, int last, const Vec<T>& seedU,
                          const Vec<T>& seedV);

// Gradients on the system's tokens back to the caller's: real tokens only, scattered to the original
// positions with zero rows on padding.
template <class T>
Mat<T> toOriginal(const System<T>& sys, const Mat<T>& onSystem, bool queries, Eigen::Index originalRows);

}  // namespace tl::banded
