#pragma once
// The 1-D coupling Λ between the sorted ranks of n_q queries and n_k keys
// (docs/operators/esp.md#unequal-sizes), in plan scale: row r (query rank) carries 1/n_q. A slice plan is
// U = R^Qᵀ Λ R^K with R^Q, R^K the sorting matrices (docs/operators/esp.md#definition), so Λ is the only
// place where n_q ≠ n_k enters.
//  nw-corner     : the tool's default, the exact OT coupling of two uniform 1-D measures (interval overlap):
//                  Λ[r,s] = |[r/n_q, (r+1)/n_q) ∩ [s/n_k, (s+1)/n_k)|; row sums 1/n_q, column sums 1/n_k.
//  interpolation : the paper's hat matrix, Λ[r,s] = max(0, 1 − |r·(n_k−1)/(n_q−1) − s|) / n_q; row
//                  sums 1/n_q, column sums only approximately 1/n_k.
// Both equal I/n when n_q = n_k.
#include <string>
#include <vector>

namespace tl {

enum class RankCoupling { NorthWestCorner, Interpolation };

RankCoupling parseRankCoupling(const std::string& text);

struct RankCouplingEntry {
  int r, s;     // query rank, key rank
  double mass;  // Λ[r, s] > 0
};

// The nonzero entries of Λ, ordered by r (then s): n_q + n_k − 1 entries at most (nw-corner), 2·n_q at
// most (interpolation).
std::vector<RankCouplingEntry> rankCoupling(int nQueries, int nKeys, RankCoupling kind);

}  // namespace tl
