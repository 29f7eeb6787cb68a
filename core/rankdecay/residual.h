#pragma once
// The residual machinery of rank decay (docs/operators/rank-decay.md#residuals), float64 throughout.
// U = I − J/n is the centring projector; nothing here forms it: every product with U is a mean subtraction.
#include "common/matrix.h"

namespace tl::rankdecay {

// res(X) = X − 1 x̄ᵀ = U X, with x̄ = Xᵀ1/n the token mean. For the spectral and Frobenius norms the mean
// is the closest rank-one "all tokens equal" matrix, so ‖res(X)‖ is the distance to rank collapse.
MatD meanResidual(const MatD& X);

// ‖M‖₂ = σ₁(M) (0 for an empty matrix), from the largest eigenvalue of the Gram matrix: full relative
// accuracy for σ₁, at a fraction of an SVD's cost.
double spectralNorm(const MatD& M);

// ‖A B‖₂ for a tall A (m × k, k ≤ m) without an m-row eigenproblem: with the thin QR A = Q R (Q with
// orthonormal columns), ‖A B‖₂ = ‖R B‖₂. Low-rank weight products (W_Q W_Kᵀ, W_V W_O) cost a k × k one.
double spectralNormOfProduct(const MatD& A, const MatD& B);

// ρ_out(X) = ‖res(X)‖₂ / ‖X‖₂ ∈ [0, 1]; 0 for X = 0.
double outputResidualRatio(const MatD& X);

// σ₂(M)/σ₁(M): the normalised SVD residual ‖M − σ₁u₁v₁ᵀ‖₂/‖M‖₂ of an attention product; 0 for rank ≤ 1.
// From the Gram matrix's two largest eigenvalues while σ₂/σ₁ ≥ 1e-2 (relative error below 1e-10 there),
// from the SVD below that, where squaring would lose the small singular value to round-off.
double sigmaRatio(const MatD& M);

// Q(Y) = U Y U = Y − row means − column means + grand mean: the orthogonal projector onto the matrices
// whose rows and columns sum to 0 (the tangent space of the doubly stochastic matrices).
MatD projectZeroMarginals(const MatD& Y);

// Dong et al.'s composite √(‖M‖₁‖M‖∞) (max column and row absolute sums). Not a norm: it breaks the
// triangle inequality; it bounds ‖M‖₂ from above.
double compositeNorm(const MatD& M);

}  // namespace tl::rankdecay
