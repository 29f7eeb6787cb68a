#pragma once
// LOT attention: doubly stochastic attention through r pivots (docs/operators/lot.md#definition).
// Queries are transported to a pivot measure σ = Σ_l w_l δ_{z_l} and σ to the keys by two log-domain
// entropic problems with budget T each (lot_coupling.h); the glued coupling A = n·P1 diag(1/w) P2 has rank
// ≤ r and is applied to V in O(n r d) without forming n×n (docs/operators/lot.md#lazy-path). Pivots:
// lot_pivots.h.
//
// Results: `plan` A (attention scale, rows = queries), `output` A V (computed from the factors), marginal
// errors of A after every step, no n×n duals (u, v empty), and the extras
//   lot_P1 (n×r, queries → pivots, transport scale), lot_P2 (r×n, pivots → keys), lot_pivot_masses (w, r×1),
//   lot_pivots (Z, r×d), lot_u1, lot_v1, lot_u2, lot_v2 (duals in score coordinates, vectors as k×1).
// mask_mode: subsequence only (docs/operators/lot.md#masks): the operator runs on the valid tokens with
// marginals 1/n_valid; padded rows of P1, columns of P2 and their potentials u1, v2 are 0.
#include "common/attention_input.h"
#include "common/feedback.h"
#include "common/param_bindings.h"
#include "ops/lot/lot_pivots.h"
#include "ops/mask_mode.h"
#include "ops/plan_result.h"

namespace tl {

class OperatorRegistry;

struct LotParams {
  int r;             // pivots (docs/operators/lot.md#pivots)
  double eps;        // shared by both problems
  int T;             // single normalisations of each problem, rows first
  double massTemp;   // w = softmax(θ / mass_temp)
  PivotInit pivotInit;
  uint64_t seed;     // k-means++ seeding or Gaussian pivots
  MatD pivots;       // Z (r×d) read from `pivots=PATH.npy`; its rows set r
  VecD massLogits;   // θ (r) from `mass_logits=PATH.npy`; empty: as pivot_init says
  MaskMode maskMode;

  LotParams();  // the schema's defaults (no files)
  // Reads the pivot files (io/npy_cache.h); InvalidArgument for inconsistent choices, FileError for unreadable
  // files.
  static LotParams from(const ParamSet& resolved);
};
const ParamBindings<LotParams>& lotParamBindings();
// pivot_init = auto resolved: file when pivots are given, else kmeans.
PivotInit resolvedPivotInit(const LotParams& params);

template <class T>
PlanResult<T> lotAttention(const AttentionInput<T>& input, const LotParams& params, Feedback& feedback = noFeedback());

// O = A V in O(n r d) without forming n×n (docs/operators/lot.md#lazy-path); equals lotAttention(...).output.
// Needs V.
template <class T>
Mat<T> lotOutput(const AttentionInput<T>& input, const LotParams& params, Feedback& feedback = noFeedback());

void registerLot(OperatorRegistry& registry);

}  // namespace tl
