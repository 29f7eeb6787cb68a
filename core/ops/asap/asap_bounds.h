#pragma once
// Two bounds of the ASAP paper's Appendix B that the ASAP view draws (docs/operators/asap.md#bounds), on one
// square problem X = S/eps with uniform marginals μ = ν = 1/n (the tokens in use). Duals are in eps units (a
// score-coordinate dual divided by eps); plans are in transport scale P, so the attention plan is A = n·P.
#include "common/matrix.h"
#include "ops/score_geometry.h"

namespace tl {

// B.34 (Proposition B.7). Column-closing two-sided ASAP from u0: v1 = K(u0), u1 = R(v1), v2 = K(u1), where K and
// R are the key-side and source-side closures. P1 = P(u1, v1) has exact rows, P2 = P(u1, v2) exact columns, and
//   ‖P2·1 − μ‖₁ ≤ ‖P2 − P1‖₁ ≤ η = max_j |ν_j/ρ_j − 1|,   ρ = P1ᵀ1.
// P2 = P1·diag(ν/ρ) (B.36), so row i of P2 − P1 is Σ_j P1_ij (ν_j/ρ_j − 1): every attention-scale row sum of
// ASAP lies in 1 ± η, which is the band the view draws.
struct TwoSidedRowBound {
  double eta = 0;
  double rowErrorL1 = 0;  // ‖P2·1 − μ‖₁
  double planGapL1 = 0;   // ‖P2 − P1‖₁, entrywise
};
TwoSidedRowBound twoSidedRowBound(const DenseScores<double>& X, const VecD& u0);

// B.10 (Proposition B.10; errata: plain KL, variances of the dual gap in eps units). The one-sided
// key-normalised plans P = P(u, K(u)) of a reference dual u and P' = P(u', K(u')) of a model dual u' both have
// columns ν, so their KLs need no mass terms: reverse KL(P'‖P) and forward KL(P‖P'). Along u_t = u + t(u' − u),
// Var_{t,j} is the variance of (u' − u)_i under column j's conditional p_t(i | j) = P_t[i, j]/ν_j, and
//   KL(P'‖P) = Σ_j ν_j ∫ t Var_{t,j} dt,   KL(P‖P') = Σ_j ν_j ∫ (1 − t) Var_{t,j} dt      (B.51, B.52)
//   both ≤ ½ Σ_j ν_j sup_t Var_{t,j}                                                          (B.53)
//        ≤ κ/(2n)·‖Π(u' − u)‖²,   κ = n·max_{i,j,t} p_t(i | j)                                 (B.54)
// The suprema over t are taken on `pathPoints` equally spaced t in [0, 1] (both ends included).
struct OneSidedKl {
  double forward = 0, reverse = 0;
  double varianceBound = 0;      // B.53
  double kappa = 0;              // column sharpness along the path, ≥ 1
  double kappaBound = 0;         // B.54
  double centredGapSquared = 0;  // ‖Π(u' − u)‖²
};
constexpr int kKlPathPoints = 33;
OneSidedKl oneSidedKl(const DenseScores<double>& X, const VecD& u, const VecD& uModel,
                      int pathPoints = kKlPathPoints);

// Σ_j ν_j Var_{t,j} at one t: the integrand of B.51 and B.52 without its weight (the tests integrate it).
double pathVariance(const DenseScores<double>& X, const VecD& u, const VecD& uModel, double t);

}  // namespace tl
