#pragma once
// Display-tile maxima of a low-rank plan on the GPU (low_rank_kernels.h): the plan's factors are uploaded, the
// maxima come back, nothing n_q × n_k is stored. Throws InvalidArgument (bad request) or CudaError.
#include <vector>

namespace tl::cuda {

// A = F·G, F [nq][r] and Gᵀ [nk][r] row-major on the host, every entry ≥ 0.
struct LowRankFactors {
  int nq = 0, nk = 0, r = 0;
  const float* f = nullptr;
  const float* gT = nullptr;
};

// Block maxima [rows][cols] of A on the display grid of rows ≤ nq × cols ≤ nk blocks (tile_index.h).
std::vector<float> lowRankMaximaCuda(const LowRankFactors& factors, int rows, int cols);

}  // namespace tl::cuda
