#pragma once
// Plain C++ face of the CUDA backend's dense attention operators, shared by every family (softmax_cuda.h,
// sinkhorn_cuda.h): std types and raw host pointers only, no CUDA, Eigen or Qt. The device computes in
// float32 (optionally with TF32 tensor cores for the score and P·V products, CudaOptions::tf32); inputs may be
// f32, f16 or bf16.
//
// Conventions (core/ops/sinkhorn/sinkhorn.h, docs/conventions.md#scores): scores S = QKᵀ/√d, X = S/eps; transport plan
// P_ij = exp(X_ij + ut_i + vt_j) with potentials in eps units, attention plan A = scale · P (the project uses
// scale = n_q), duals in score coordinates u = eps·ut, v = eps·vt. A token whose log marginal is −inf is
// inactive: its potential is −inf and its plan row (column) is 0. Mask modes are the caller's business: for
// `keep-queries` pass logNu = −inf on padded keys; for `subsequence` compact the valid tokens first (as
// core/ops/subsequence.cpp does) and scatter the results back.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/element_convert.h"

namespace tl::cuda {

// A batch of equally shaped heads (batch = B·H), each an independent problem.
struct AttentionProblem {
  int batch = 1;
  int nq = 0, nk = 0;  // queries (plan rows), keys (plan columns)
  int d = 0;           // head dimension of q and k
  int dv = 0;          // columns of v (0 when v is absent)
  ElementType type = ElementType::F32;
  const void* q = nullptr;  // [batch][nq][d], row-major
  const void* k = nullptr;  // [batch][nk][d]
  const void* v = nullptr;  // [batch][nk][dv], optional: with v the run returns O = A·V
  std::vector<float> logMu;  // [nq] log row marginals (transport scale), shared by the batch; −inf = inactive
  std::vector<float> logNu;  // [nk] log column marginals; −inf = inactive (e.g. a padded key)
  float scale = 1.f;         // attention scale: A = scale · P
};

// A float32 problem over host arrays already in the batched layout: q [batch][nq][d], k [batch][nk][d],
// v [batch][nk][dv] (null with dv = 0). The arrays must outlive the problem.
inline AttentionProblem batchedProblem(int batch, int nq, int nk, int d, const float* q, const float* k,
                                       const float* v, int dv, std::vector<float> logMu, std::vector<float> logNu,
                                       float scale) {
  AttentionProblem p;
  p.batch = batch;
  p.nq = nq;
  p.nk = nk;
  p.d = d;
  p.q = q;
  p.k = k;
  p.v = dv > 0 ? v : nullptr;
  p.dv = dv > 0 ? dv : 0;
  p.logMu = std::move(logMu);
  p.logNu = std::move(logNu);
  p.scale = scale;
  return p;
}

// What a run computes besides the duals, and how it may be stopped.
struct CudaOptions {
  bool plan = false;      // the dense plan A [batch][nq][nk] (views and export only: n_q·n_k memory)
  int tileRows = 0;       // display tiles: block mean and max of A on at most tileRows × tileCols blocks
  int tileCols = 0;       //   (both 0: none; both ≥ 1 otherwise)
  bool histories = false; // u and v after every single normalisation
  bool errors = true;     // marginal errors after every step (one extra half-step, as the CPU reference)
  // Polled between half-steps; returning true stops the run: device memory is freed and tl::Canceled thrown.
  std::function<bool()> canceled;
  // TF32 tensor cores for the tile products QKᵀ (every kernel) and P·V (the output): q, k, v and the plan tile
  // are rounded to TF32 (relative 2^-11 each) and multiplied with float32 accumulation; everything else stays
  // float32. Several times faster on sm_80+; a score x = q·k/(√d·eps) then carries an error up to about
  // 2^-10 · Σ_k|q_k k_k| / (√d·eps) (|x|·2^-10 when the terms share a sign), which a T-step loop can
  // accumulate to 2T times that in the plan's exponent: fine at eps = 1, coarse for small eps or large |S|.
  bool tf32 = false;
  int device = 0;
  bool syncEachKernel = false;  // wait for every kernel (pinpoints a failing kernel); also TL_CUDA_SYNC=1
};

// Marginal errors of the plan after one step, attention scale (core/ops/plan_result.h MarginalErrors).
struct StepErrors {
  double rowMax = 0, rowMean = 0, colMax = 0, colMean = 0;
};

// A downsampled plan: rows' = min(nq, tileRows) × cols' = min(nk, tileCols) blocks; block (r, c) covers
// plan rows [rowStarts[r], rowStarts[r+1]) and columns [colStarts[c], colStarts[c+1]).
struct DisplayTiles {
  int rows = 0, cols = 0;
  std::vector<long long> rowStarts, colStarts;  // rows' + 1, cols' + 1 entries
  std::vector<float> mean, max;                 // [batch][rows'][cols']: block mean and block max of A
};

struct CudaAttentionResult {
  int steps = 0;                          // T of the run (rows of the histories)
  std::vector<float> u, v;                // [batch][nq], [batch][nk] final duals, score coordinates
  std::vector<float> uHistory, vHistory;  // [batch][T][nq], [batch][T][nk] when asked
  std::vector<StepErrors> errorHistory;   // [batch][T] when asked; errors of the returned plan: the last
  std::vector<float> output;              // [batch][nq][dv] O = A·V when v was given
  std::vector<float> plan;                // [batch][nq][nk] when asked
  DisplayTiles tiles;                     // when asked
  double seconds = 0;                     // wall time of the call: upload, compute, download
};

// Throws InvalidArgument naming the problem: shapes, missing arrays, log marginals that are NaN or +inf or
// leave a side without any active token, bad scale or display-tile request. O(n) host work: the inputs'
// values are checked on the device while they are converted (see throwNonFinite).
void validateProblem(const AttentionProblem& problem, const CudaOptions& options, const std::string& family);

// Called when the device found a NaN/Inf in q, k or v: scans the host arrays and throws InvalidArgument
// naming the first one (array, head, row, column).
[[noreturn]] void throwNonFinite(const AttentionProblem& problem, const std::string& family);

}  // namespace tl::cuda
