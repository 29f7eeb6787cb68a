#pragma once
// Banded Sinkhorn attention on the GPU (core/ops/banded/banded.h on the CUDA backend): the loop of
// core/ops/sinkhorn/sinkhorn_loop.h restricted to the band |i − j| ≤ W on raw indices, a centred stopped base
// of `baseSteps` full steps and a raw tail of `tailSteps` (docs/operators/banded.md#definition). Row tiles
// visit only the key tiles their band meets (band_kernels.h): work O(batch·n·(W + 64)·d) per pass, device
// memory O(batch·n·(d + d_v)); never n_q × n_k. The band of scores (O(n·W)) is computed only when asked
// (bandScoresCuda). Conventions and the problem: attention_problem.h; the caller passes the band's active
// tokens as the log marginals (−inf on rows and columns with no support entry, and on padding).
// Throws InvalidArgument (bad request), CudaError or tl::Canceled; device memory is released on every path.
#include <vector>

#include "cuda/attention_problem.h"

namespace tl::cuda {

struct BandedCudaParams {
  long long W = 16;   // half-band width
  int baseSteps = 15; // centred full (row + column) steps
  int tailSteps = 2;  // raw full steps after them
  double eps = 1.0;
  int budget() const { return 2 * (baseSteps + tailSteps); }  // single normalisations
};

// The dense result's fields (no plan, no display tiles: the band comes from bandScoresCuda) and the final
// plan's row and column sums (attention scale, [batch][nq] and [batch][nk]): one more pass each way after the
// loop, for the banded view's per-tile errors. Duals and histories are the raw (uncentred) ones.
struct BandedCudaResult : CudaAttentionResult {
  std::vector<float> rowSums, colSums;
};

BandedCudaResult bandedCuda(const AttentionProblem& problem, const BandedCudaParams& params,
                            const CudaOptions& options = {});

// X = QKᵀ/(√d·eps) on the band: [batch][nq][2W + 1], slot s of row i holding X(i, i − W + s) and −inf off the
// support (core/ops/score_geometry.h BandScores' layout). O(batch·n·W) memory: for the plan, when asked.
std::vector<float> bandScoresCuda(const AttentionProblem& problem, long long W, double eps);

// InvalidArgument unless W ≥ 0, baseSteps, tailSteps ≥ 0 with at least one step, eps finite and > 0, and no
// dense plan or display tiles are asked of the loop.
void validateBandedParams(const BandedCudaParams& params, const CudaOptions& options);

}  // namespace tl::cuda
