#pragma once
// Hard ESP attention on the GPU (core/ops/esp on the CUDA backend; docs/operators/esp.md): per item (head) and
// slice θ_l, the projections of queries and keys, a segmented sort of them (stable by token index), the tie
// groups of equal projections (ties=split), the blocks the rank coupling Λ makes of them, the slice costs D_l,
// the weights (host) and the output Σ_l n_q·w_l·U_l·V by gathers: O(L·n·(log n + d + d_v)) work and O(L·n)
// memory per item without ties, never n_q × n_k. Tie groups cost more, as on the CPU (esp_kernels.h): a block
// of groups g_q, g_k costs |g_q|·|g_k|·d, so a tie group of the whole sequence makes a slice O(n_q·n_k·d).
// Plain C++: std types and host pointers, no CUDA headers. Throws InvalidArgument (bad request), CudaError or
// tl::Canceled; device memory is released on every path.
#include <functional>
#include <vector>

namespace tl::cuda {

// One nonzero entry of the rank coupling Λ (ops/esp/rank_coupling.h): query rank r, key rank s, plan-scale mass.
struct EspCouplingEntry {
  int r, s;
  float mass;
};

struct EspCudaProblem {
  int batch = 1, nq = 0, nk = 0, d = 0, dv = 0, L = 0;
  const float* q = nullptr;  // [batch][nq][d], as ESP compares them (scaled by the caller under compat)
  const float* k = nullptr;  // [batch][nk][d]
  const float* v = nullptr;  // [batch][nk][dv], or null with dv = 0
  const float* directions = nullptr;  // [L][d], made on the host
  std::vector<EspCouplingEntry> coupling;  // Λ's nonzero entries, ordered by query rank
  float p = 2;                             // ground-cost exponent
  bool splitTies = true;  // ties=split: tied projections form groups that share their mass; false: ties=break
};

struct EspCudaOptions {
  // The weights w [L] of one item from its costs D [L] (the host's softmax, with its overflow check).
  std::function<std::vector<float>(const std::vector<float>& costs)> weights;
  bool orders = true;  // download the sorted values and orders (the result's plan and matchings)
  std::function<bool()> canceled;  // polled after the sort and after the costs
  int device = 0;
  bool syncEachKernel = false;
};

struct EspCudaResult {
  std::vector<float> costs, weights;    // [batch][L]
  std::vector<float> queryValues, keyValues;  // [batch][L][n]: sorted projections (with `orders`)
  std::vector<int> queryOrder, keyOrder;      // [batch][L][n]: tokens by ascending projection, ties by index
  std::vector<float> output;                  // [batch][nq][dv]
};

EspCudaResult espCuda(const EspCudaProblem& problem, const EspCudaOptions& options);

// InvalidArgument unless the sizes are positive, batch·L·n fits the sort's int indexing, L fits a grid
// dimension, the pointers are set and `weights` is given.
void validateEspProblem(const EspCudaProblem& problem, const EspCudaOptions& options);

}  // namespace tl::cuda
