#pragma once
// Sinkhorn attention on the GPU (core/ops/sinkhorn/sinkhorn.h on the CUDA backend): the log-domain duals loop of
// core/ops/sinkhorn/sinkhorn_loop.h with scores recomputed tile by tile (FlashSinkhorn-style streaming log-sum-exp):
// device memory O(batch·n·(d + d_v)), never n_q × n_k unless the dense plan is asked for.
// Conventions and the problem: attention_problem.h. Throws InvalidArgument (bad request), CudaError (no
// device, old driver, out of memory, kernel failure) or tl::Canceled; device memory is released on every path.
#include <utility>
#include <vector>

#include "cuda/attention_problem.h"

namespace tl::cuda {

struct SinkhornCudaParams {
  SinkhornCudaParams() = default;
  SinkhornCudaParams(int budget, double temperature, std::vector<float> initialColumnDuals = {})
      : T(budget), eps(temperature), initialV(std::move(initialColumnDuals)) {}

  int T = 10;        // budget: single normalisations, rows first (T = 1 is row softmax of X)
  double eps = 1.0;  // temperature: X = QKᵀ/(√d·eps)
  // The column duals before the first half-step ([batch][nk], score coordinates, finite or −inf on an
  // inactive key); empty: 0 (−inf on inactive keys), the Sinkhorn loop's start. ASAP starts from a predicted
  // dual: run on the transposed problem, its closures are this loop from that dual (ops/asap/asap_device.h).
  std::vector<float> initialV;
};

// Final duals u, v (score coordinates); with v: O = A·V computed from the duals without storing A; and,
// as `options` asks, the dual histories, the marginal errors after every step (computed exactly as
// runSinkhornLoop: T + 1 half-steps), the dense plan A and display tiles.
CudaAttentionResult sinkhornCuda(const AttentionProblem& problem, const SinkhornCudaParams& params,
                                 const CudaOptions& options = {});

// The same outputs (O, plan, display tiles) from given duals in score coordinates (u [batch][nq],
// v [batch][nk], −inf on inactive tokens) without running the loop, e.g. to redraw display tiles at another
// resolution or to apply a CPU-computed plan. Histories and errors are not computed.
CudaAttentionResult planFromDualsCuda(const AttentionProblem& problem, const std::vector<float>& u,
                                      const std::vector<float>& v, double eps, const CudaOptions& options = {});

// Throw InvalidArgument unless T ≥ 1, eps is finite and > 0 and initial duals (when given) have batch·nk
// entries, each finite or −inf; unless u and v have batch·nq and batch·nk entries, each finite or −inf.
void validateSinkhornParams(const AttentionProblem& problem, const SinkhornCudaParams& params);
void validateDuals(const AttentionProblem& problem, const std::vector<float>& u, const std::vector<float>& v,
                   double eps);

}  // namespace tl::cuda
