#pragma once
// Soft ESP (SoftSort) on the GPU (core/ops/esp/esp.h with sort=soft; docs/operators/esp.md#soft-sorting):
//   A = Σ_l c_l · U_l,   U_l = (R^Q_l)ᵀ Λ R^K_l,   D_l = <C, U_l>,   c_l = coefficients(D) (n_q·w_l),
// with R^Q_l, R^K_l the SoftSort matrices of the slice's projections. The caller sorts the projections (on
// the host, O(L·n log n)) and hands them over in ascending order with the token each sorted position holds.
// On the device, slice by slice: the SoftSort rows as bands (esp_soft_bands.h: entries beyond the band are
// below float32 rounding), D_l from tiles of U_l dotted with tiles of C recomputed from q and k, then, once
// the weights are known, the tiles of U_l added into the one n_q × n_k plan, and O = A·V. SoftSort entries
// are formed where a tile loads them and U_l exists only as 16 × 16 tiles in registers: the plan is the run's
// one n_q × n_k buffer, beside O(n·(d + d_v)) numbers.
// Throws InvalidArgument (bad request), CudaError or tl::Canceled; device memory is released on every path.
#include <functional>
#include <vector>

namespace tl::cuda {

struct EspSoftProblem {
  int nq = 0, nk = 0, d = 0;      // tokens of the plan (padded ones included) and the head dimension
  const float* q = nullptr;       // [nq][d] row-major, as ESP sees them (compat scaling applied)
  const float* k = nullptr;       // [nk][d]
  const float* v = nullptr;       // [nk][dv], optional: O = A·V
  int dv = 0;
  int slices = 0;                 // L
  int validQ = 0, validK = 0;     // tokens that take part (the rest are padding: zero rows and columns)
  std::vector<float> sortedQ;     // [L][validQ] the queries' projections, ascending per slice
  std::vector<float> sortedK;     // [L][validK]
  std::vector<int> tokenQ;        // [L][validQ] the token (row of q, of the plan) of each sorted position
  std::vector<int> tokenK;        // [L][validK]
  // The rank coupling Λ (ops/esp/rank_coupling.h): entry e couples query rank couplingRank[e] with key rank
  // couplingKeyRank[e] with mass couplingMass[e] (transport scale), ordered by query rank, then key rank.
  std::vector<int> couplingRank, couplingKeyRank;
  std::vector<float> couplingMass;
  float sortTemp = 1.f;           // SoftSort temperature t
  float reach = 0.f;              // band: entries with |x_(r) − x_j| > reach are 0 (ops/esp/soft_sort.h)
  float p = 2.f;                  // ground-cost exponent, C_ij = ‖q_i − k_j‖^p
};

struct EspSoftCudaResult {
  std::vector<float> plan;        // [nq][nk] attention scale, zero on padded rows and columns
  std::vector<float> output;      // [nq][dv] when v was given
  std::vector<float> costs;       // [L] the soft D_l
  double seconds = 0;             // wall time of the run
};

// The plan's coefficient per slice from the slice costs (n_q·softmax(−tau·D)); called once, between the pass
// that measures D and the pass that forms the plan.
using SliceCoefficients = std::function<std::vector<float>(const std::vector<float>& costs)>;

EspSoftCudaResult espSoftCuda(const EspSoftProblem& problem, const SliceCoefficients& coefficients,
                              const std::function<bool()>& canceled);

// InvalidArgument unless the sizes agree, every sorted array is ascending with finite values, the tokens are
// in range, Λ is ordered, and t, reach and p are usable.
void validateEspSoftProblem(const EspSoftProblem& problem);

}  // namespace tl::cuda
