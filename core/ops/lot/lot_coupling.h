#pragma once
// The two entropic problems of LOT and their glued coupling (docs/operators/lot.md#definition):
//   (1) P1 ∈ Π(1/n_q, w) on S1 = Q Zᵀ/√d (queries → pivots), duals u1 (queries), v1 (pivots);
//   (2) P2 ∈ Π(w, 1/n_k) on S2 = Z Kᵀ/√d (pivots → keys),    duals u2 (pivots), v2 (keys);
// each solved in the log domain by T single normalisations rows first, from zero potentials:
//   P1_il = exp((S1_il + u1_i + v1_l)/eps),  P2_lj = exp((S2_lj + u2_l + v2_j)/eps),
// glued into the attention-scale plan A = n_q · P1 diag(1/w) P2 (n_q/n_k-scaled columns when the
// sides differ in size). The 1/√d scale applies to queries and keys only, never to the pivots.
#include <vector>

#include "common/feedback.h"
#include "common/matrix.h"
#include "ops/plan_result.h"

namespace tl {

template <class T>
struct LotCoupling {
  Mat<T> P1;              // n_q × r, transport scale: rows sum to 1/n_q, columns to w (when exact)
  Mat<T> P2;              // r × n_k: rows sum to w, columns to 1/n_k (when exact)
  Vec<T> logw;            // log pivot masses, r
  Vec<T> u1, v1, u2, v2;  // final duals, score coordinates
  // Marginal errors of A after single normalisation t of both problems, t = 1..T (empty unless asked).
  std::vector<MarginalErrors> errorHistory;

  // O = A V = n_q · P1 (diag(1/w) (P2 V)) in O(n r d), never forming n×n (docs/operators/lot.md#lazy-path).
  Mat<T> apply(const Mat<T>& V) const;
  // Aᵀ W = n_q · P2ᵀ (diag(1/w) (P1ᵀ W)), likewise.
  Mat<T> applyTransposed(const Mat<T>& W) const;
  // A = n_q · P1 diag(1/w) P2, n_q × n_k, for display and the dense checks; or only rows [first, first + count).
  Mat<T> dense() const;
  Mat<T> denseRows(Eigen::Index first, Eigen::Index count) const;
  // B = n_q · diag(1/w) P2 (r × n_k), so that A = P1 B.
  Mat<T> gluedKeys() const;
  // Display tiles of A (ops/transport_plan.h) without forming its rows. Block means are exact from the
  // factors' block sums, Σ_R Σ_C A = (Σ_R P1)(Σ_C B): O(n·r + blocks²·r). A block maximum needs the block's
  // entries: A is formed in tiles of whole blocks (rows of P1 times columns of B) on the CPU's cores, O(n_q·n_k·r)
  // work but one tile of memory per thread. `pooledMeans` (given B = gluedKeys()) leaves max unset for a device
  // kernel to fill.
  PooledPlan<T> pooledMeans(int maxRows, int maxCols, const Mat<T>& glued) const;
  PooledPlan<T> pooled(int maxRows, int maxCols) const;
  // Marginal errors of A from the factors in O(n r), never forming A (docs/operators/lot.md#outputs).
  MarginalErrors errors() const;
  // Attention-scale targets: rows 1, columns n_q/n_k (1 when square).
  Vec<T> rowTarget() const;
  Vec<T> colTarget() const;
};

// Q (n_q×d), K (n_k×d), pivots Z (r×d), log masses (r). `trackErrors` forms both plans after every step
// to record errorHistory (2·n·r more exponentials per step); without it only the final plans are formed.
template <class T>
LotCoupling<T> solveLotCoupling(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& Z, const Vec<T>& logw, double eps,
                                int budget, bool trackErrors, Feedback& feedback);

}  // namespace tl
