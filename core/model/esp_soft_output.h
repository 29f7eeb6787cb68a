#pragma once
// Soft ESP attention output for training (spec/esp.md §3.2 soft mode, §4.1–§4.2), for n_q = n_k and p = 2,
// as one autograd function that never forms the [B, H, L, n, n] SoftSort matrices.
//
// Why: the dense graph's [B, H, L, n, n] temporaries and their backward dominated ESP training. At
// sort_temp = 1e-3 a SoftSort row is exactly zero in floating point beyond a projected gap of about
// sqrt(104·sort_temp) (float32 exp underflow, spec §4.1), so the rows of A_l and B_l are bands, contiguous in
// sorted order (about 20 of 50 entries on the softmax sample checkpoint's queries). This keeps only the
// bands and, for p = 2, uses
//   D_l = <C, U_l> = (1/n)·Σ_r [ (A_l q²)_r + (B_l k²)_r − 2 (A_l Q)_r·(B_l K)_r ]   (rows of B_l sum to 1)
//   Out = Σ_l w_l A_lᵀ (B_l V),   w = softmax(−tau·D)
// Entries are dropped only where exp underflows to exactly 0 in the tensor's precision, so results equal
// the dense graph up to rounding (tests/core/model/torch_normalisers_test.cpp compares values and gradients).
#include <torch/torch.h>

namespace tl {

// sq, sk: projections Q·Θᵀ, K·Θᵀ transposed to [B, H, L, n]; q, k [B, H, n, m]; v [B, H, n, d_v]; all of
// one floating type. Returns Out [B, H, n, d_v]; differentiable in sq, sk, q, k and v. Throws
// InvalidArgument for non-finite projections (sorting them has no meaning).
torch::Tensor espSoftOutput(const torch::Tensor& sq, const torch::Tensor& sk, const torch::Tensor& q,
                            const torch::Tensor& k, const torch::Tensor& v, double sortTemp, double tau);

}  // namespace tl
