#pragma once
// One hard ESP slice (docs/operators/esp.md#definition, #unequal-sizes, #ties): tokens sorted by their
// projection, grouped into tie groups, and the lifted plan U_l = R^Qᵀ Λ R^K stored as plan-scale masses moved
// between query and key tie groups. Inside a pair of groups the mass is spread uniformly (ties=split). With
// ties=break every group is one token, so U_l is Λ between single tokens (a permutation /n when n_q = n_k).
// Nothing is n×n: a slice holds O(n_q + n_k) numbers, and the plan, its cost and its product with V are read
// from the blocks.
#include <cstddef>
#include <vector>

#include "common/matrix.h"
#include "common/prefetch.h"
#include "ops/esp/rank_coupling.h"
#include "ops/transport_plan.h"

namespace tl {

// docs/operators/esp.md#ties: split = the lifted plan (mass shared uniformly inside tie groups, the t → 0
// limit of SoftSort); break = one permutation from a stable sort by (value, token index).
enum class TiePolicy { Split, Break };

struct HardSlice {
  struct Block {
    int queryGroup, keyGroup;
    double mass;  // plan scale: Σ Λ[r, s] over the ranks r, s the two groups occupy
  };
  std::vector<int> queryOrder, keyOrder;            // tokens by ascending projection, ties by token index
  std::vector<int> queryGroupStart, keyGroupStart;  // first rank of each group, then a final n sentinel
  std::vector<Block> blocks;                        // ordered by (queryGroup, keyGroup), no duplicates
  // Break-rule matching: for each query the key whose rank receives most of its rank's mass (the first
  // such key on a tie). π_l of docs/operators/esp.md#definition when n_q = n_k, also under ties=split (where
  // U_l itself is not a permutation on tied groups).
  std::vector<int> matching;
  int tiedTokens = 0;  // queries plus keys that share their projected value with another token (the esp_ties flag)
};

template <class T>
HardSlice hardSlice(const Vec<T>& queryProjection, const Vec<T>& keyProjection,
                    const std::vector<RankCouplingEntry>& coupling, TiePolicy ties);
// The same slice from orders sorted elsewhere (the device's segmented sort, ops/esp/esp_device.h): they
// must be the stable ascending orders of the projections, ties by token index, as hardSlice forms them.
template <class T>
HardSlice hardSliceFromOrders(const Vec<T>& queryProjection, std::vector<int> queryOrder,
                              const Vec<T>& keyProjection, std::vector<int> keyOrder,
                              const std::vector<RankCouplingEntry>& coupling, TiePolicy ties);

// D_l = <C, U_l> = Σ_blocks mass/(|g_q||g_k|) Σ_{i∈g_q, j∈g_k} ‖q_i − k_j‖^p
// (docs/operators/esp.md#definition, step 5).
template <class T>
T sliceCost(const HardSlice& slice, const Mat<T>& Q, const Mat<T>& K, double p);

// visit(i, j, a) for every entry of scale·U_l: each tie-group block spreads its mass evenly over its pairs.
template <class T, class Visit>
void forEachSliceEntry(const HardSlice& s, T scale, Visit&& visit) {
  for (const auto& b : s.blocks) {
    const int q0 = s.queryGroupStart[b.queryGroup], q1 = s.queryGroupStart[b.queryGroup + 1];
    const int k0 = s.keyGroupStart[b.keyGroup], k1 = s.keyGroupStart[b.keyGroup + 1];
    const T entry = scale * T(b.mass) / T((q1 - q0) * (k1 - k0));
    for (int r = q0; r < q1; ++r)
      for (int c = k0; c < k1; ++c) visit(Eigen::Index(s.queryOrder[r]), Eigen::Index(s.keyOrder[c]), entry);
  }
}

// True when every tie group of the slice is one token (ties=break, or no equal projections): its blocks are the
// coupling's entries, one pair each.
inline bool withoutTieGroups(const HardSlice& s) {
  return s.queryGroupStart.size() == s.queryOrder.size() + 1 && s.keyGroupStart.size() == s.keyOrder.size() + 1;
}

// Asks for every cache line of row i of M ahead of its use: a slice pairs rows of Q, K and V in the order of
// its projections, which the hardware prefetcher cannot guess.
template <class T>
void prefetchRow(const Mat<T>& M, Eigen::Index i) {
  prefetchSegment(M.data() + i * M.cols(), M.cols());
}

// Entries of U_l, counted without visiting them: Σ over blocks of |g_q|·|g_k| (one per block without ties).
inline std::size_t sliceEntryCount(const HardSlice& s) {
  if (withoutTieGroups(s)) return s.blocks.size();
  std::size_t count = 0;
  for (const auto& b : s.blocks)
    count += std::size_t(s.queryGroupStart[b.queryGroup + 1] - s.queryGroupStart[b.queryGroup]) *
             std::size_t(s.keyGroupStart[b.keyGroup + 1] - s.keyGroupStart[b.keyGroup]);
  return count;
}

// plan += scale·U_l (scale = n_q·w_l gives this slice's share of A = n_q·G), for the rows
// [firstRow, firstRow + plan.rows()) of U_l; `plan` is a matrix or a block of a matrix's rows (call it as
// addSlicePlan<T>: T is not deduced from the block).
template <class T>
void addSlicePlan(const HardSlice& slice, T scale, Eigen::Ref<Mat<T>> plan, Eigen::Index firstRow = 0);
// entries += the entries of scale·U_l (a pair appears once per slice; SlicedPlan merges them).
template <class T>
void addSliceEntries(const HardSlice& slice, T scale, std::vector<PlanEntry<T>>& entries);

// output += scale·U_l·V by gather: query i ∈ g_q receives scale·mass/(|g_q||g_k|)·Σ_{j∈g_k} v_j; with
// `transposed`, output += scale·U_lᵀ·V (key j ∈ g_k receives the same share of Σ_{i∈g_q} v_i).
template <class T>
void addSliceProduct(const HardSlice& slice, T scale, const Mat<T>& V, Mat<T>& output, bool transposed);

// C_ij = ‖q_i − k_j‖^p from ‖q_i − k_j‖² (docs/operators/esp.md#definition); p = 2 needs no square root.
template <class T>
T groundCost(T squaredDistance, double p);

}  // namespace tl
