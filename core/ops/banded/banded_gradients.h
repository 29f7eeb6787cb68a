#pragma once
// Exact gradients of banded Sinkhorn attention (docs/operators/banded.md#gradients): the loss is
// L = Σ_ij G_ij·O_ij with O the operator's output on V (what `tlens plan` writes as output.npy), and the
// gradient is either the surrogate's — the base of `base_steps` full steps is a stopped constant, only the
// `tail_steps` raw tail is differentiated (the paper's Prop. 1; Prop. 2 for two tail steps) — or full
// backpropagation through every base and tail step (the reference the bias certificate measures against).
// Cost O((base_steps + tail_steps)·n·W·d) time; beyond the band scores the forward already holds, the
// surrogate keeps O(tail_steps·n) vectors and full backpropagation O((base_steps + tail_steps)·n), each with one
// band-shaped buffer for the score cotangent.
#include "common/attention_input.h"
#include "ops/banded/banded.h"

namespace tl {

enum class BandedGradientMode {
  Surrogate,  // stopped base, differentiated tail (what the paper trains with)
  Full,       // backpropagation through all base_steps + tail_steps steps
};

// How the surrogate's two-step tail forms its four staircase plans: each from its own potentials
// ("direct four-plan", Prop. 1), or the reference plan P^(2,2) rescaled by dual differences
// ("one-reference", Prop. 2). Other depths, and Full, always use the direct form.
enum class BandedTailSchedule { Direct, OneReference };

struct BandedGradientOptions {
  BandedGradientMode mode = BandedGradientMode::Surrogate;
  BandedTailSchedule schedule = BandedTailSchedule::OneReference;
};

template <class T>
struct BandedGradients {
  Mat<T> output;      // O, n_q × d_v
  Mat<T> dQ, dK, dV;  // shapes of Q, K, V; zero rows on padded tokens
  double forwardSeconds = 0, backwardSeconds = 0;
};

// G must have the output's shape (n_q × d_v). InvalidArgument for a missing V, shape mismatches, or the
// parameter errors of bandedAttention.
template <class T>
BandedGradients<T> bandedGradients(const AttentionInput<T>& input, const BandedParams& params, const Mat<T>& G,
                                   const BandedGradientOptions& options = {});

}  // namespace tl
