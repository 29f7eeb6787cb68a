#pragma once
// Theory curves for pure self-attention stacks without LayerNorm (docs/operators/rank-decay.md#theory),
// all on the absolute residual r_ℓ = ‖res(X_ℓ)‖₂ and all in log10, so that 3^ℓ exponents never overflow:
//
//   printed     the paper's Thm 2, c_P = βH/√(n³ d_qk), r_ℓ ≤ c_P r_{ℓ−1}³. NOT a valid bound: its constant is
//               √n too small per layer and the gap compounds with depth. Shown for reference only.
//   linearised  the corrected first-order estimate, c_L = βH/(n √d_qk). An estimate, sharp only as the
//               scores go to 0; not a bound.
//   rigorous    r_ℓ ≤ r_{ℓ−1} Σ_h min(1, e^{4a_h} − 1)‖W_h‖₂, a_h = ‖W_QK,h‖₂ r_{ℓ−1}²/√d_qk: a true bound for
//               converged (exactly doubly stochastic) Sinkhorn attention, from the weights and r_0 only.
//               Its local variant takes the measured r_{ℓ−1} and a_h = max_ij |A_h,ij| of the measured
//               centred scores: a one-step bound per layer, drawn as markers.
//   data        r_ℓ ≤ Σ_h (‖U P_h U‖₂ r_{ℓ−1} ‖W_h‖₂ + ‖U e_h‖₂ ‖W_hᵀ x̄_{ℓ−1}‖₂), e_h = P_h 1 − 1: exact one-step
//               bound for any normaliser, from the measured X_{ℓ−1} and P_h.
//
// β per layer is max_h ‖W_QK,h‖₂ ‖W_h‖₂ with W_QK,h = W_Q,h W_K,hᵀ (times the score factor), W_h = W_V,h W_O,hᵀ.
#include <string>
#include <vector>

namespace tl::rankdecay {

// Logs of tiny or zero values are clamped here, and the curves' logs to [−kLog10Clamp, +kLog10Clamp].
constexpr double kLog10Clamp = 320;

struct LayerWeightNorms {
  std::vector<double> qk, h;  // per head: ‖W_QK,h‖₂ (score factor included), ‖W_h‖₂
};

// What one sample's forward pass gives the theory.
struct SampleTheoryInputs {
  int n = 0, headDim = 0;
  double r0 = 0;                          // ‖res(X_0)‖₂
  std::vector<LayerWeightNorms> layers;   // ℓ = 1 … L
  std::vector<double> maxCentredScore;    // ℓ = 1 … L: max_h max_ij |A_h,ij|, A_h = R W_QK,h Rᵀ/√d_qk of X_{ℓ−1}
  std::vector<double> dataBound;          // ℓ = 1 … L: the data bound on r_ℓ
  std::vector<double> localRigorousBound; // ℓ = 1 … L: the local rigorous bound on r_ℓ
};

// One rigorous step r_{ℓ−1} Σ_h min(1, e^{4a_h} − 1)‖W_h‖₂ (spec 3.4.3), the exponent clamped so that
// nothing overflows; a_h per head, normH[h] = ‖W_h‖₂.
double rigorousStep(double r, const std::vector<double>& a, const std::vector<double>& normH);

// log10 of each curve at ℓ = 0 … L (ℓ = 0 is log10 r_0; `data` and `localRigorous` start at ℓ = 1, their
// ℓ = 0 entry is r_0 too).
struct SampleBounds {
  std::vector<double> printed, linearised, rigorous, data, localRigorous;
  double printedSqrtCr0 = 0, linearisedSqrtCr0 = 0;  // √c·r_0 with c from the largest β over layers
};

SampleBounds sampleBounds(const SampleTheoryInputs& inputs);

// Layerwise recursion log r_ℓ = log c_ℓ + 3 log r_{ℓ−1}, clamped.
std::vector<double> log10CubicRecursion(const std::vector<double>& log10c, double log10r0);
// Closed form of the same recursion with one c: c^{−1/2} (√c r_0)^{3^ℓ}, in log10 (not clamped).
double log10CubicClosedForm(double log10c, double log10r0, int layers);
// The global bound decays iff √c·r_0 < 1; vacuous (growing) otherwise.
bool vacuous(double sqrtCr0);

double clampedLog10(double value);

}  // namespace tl::rankdecay
