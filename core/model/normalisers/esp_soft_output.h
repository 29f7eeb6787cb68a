#pragma once
// Soft ESP attention output for training (docs/operators/esp.md#soft-sorting, #training), for n_q = n_k and
// p = 2, as one autograd function that never forms the [B, H, L, n, n] SoftSort tensors.
//
// Why: the dense LibTorch graph over [B, H, L, n, n] made a dozen passes through memory per step and ran its
// products as batched small matrix multiplications, and that dominated ESP training. Here each (batch, head)
// works slice by slice with SoftSort columns in sorted order, where every row of A_l and B_l is a narrow band
// around its anchor (entries beyond it are below the type's rounding), so each product costs O(n·band) and
// no n×n block is formed. For p = 2
//   D_l = <C, U_l> = (1/n)·Σ_r [ (A_l q²)_r + (B_l k²)_r − 2 (A_l Q)_r·(B_l K)_r ]   (rows of B_l sum to 1)
//   Out = Σ_l w_l A_lᵀ (B_l V),   w = softmax(−tau·D)
// The backward pass is written out by hand and recomputes the slices. Values and gradients equal the dense
// graph's up to rounding (tests/core/model/torch_normalisers_test.cpp); `tlens bench --training --op esp`
// times both in one run.
#include <torch/torch.h>

namespace tl {

// sq, sk: projections Q·Θᵀ, K·Θᵀ transposed to [B, H, L, n]; q, k [B, H, n, m]; v [B, H, n, d_v]; all of
// one floating type. Returns Out [B, H, n, d_v]; differentiable in sq, sk, q, k and v. Throws
// InvalidArgument for non-finite projections (sorting them has no meaning).
torch::Tensor espSoftOutput(const torch::Tensor& sq, const torch::Tensor& sk, const torch::Tensor& q,
                            const torch::Tensor& k, const torch::Tensor& v, double sortTemp, double tau);

}  // namespace tl
