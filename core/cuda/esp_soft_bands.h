#pragma once
// Where the work of a soft ESP slice is (esp_soft_cuda.h), planned on the host in O(n) per slice. Pure
// functions of the sorted projections, tested on the CPU.
//
// In sorted order a SoftSort row r is a band [lo_r, lo_r + len_r) around its anchor r: the logits
// −(x_(c) − x_(r))²/t fall off monotonically away from it, and beyond `reach` they are below float32 rounding
// (ops/esp/soft_sort.h). Both band ends only move right as r grows. U_l = (R^Q)ᵀ Λ R^K in sorted coordinates
// is then a sum over the entries e = (r, s) of Λ of mass_e · R^Q[r, :]ᵀ R^K[s, :], and a 16 × 16 tile of U_l
// (query positions A, key positions B) needs only the entries whose query band meets A and whose key band
// meets B: a contiguous range of e on each side, since r and s grow with e (s up to one step back under the
// interpolation coupling, which the running max and min below absorb). The key tiles that share an entry
// with query tile A are contiguous too. When t is large the band is the whole row and every tile is visited:
// the dense product, with nothing skipped.
#include <vector>

namespace tl::cuda {

constexpr int kEspTile = 16;  // the U_l tile: 16 × 16 entries, one per thread

// The SoftSort rows of one side of one slice: row r is nonzero on the columns [lo[r], lo[r] + len[r]) (sorted
// positions).
struct SoftSortBands {
  std::vector<int> lo, len;
};

// `sorted`: n ascending values.
SoftSortBands softSortBands(const float* sorted, int n, float reach);

// The entry range [first[t], end[t]) of Λ that can reach tile t of one side: `ranks[e]` is that side's rank
// of entry e (query ranks, or key ranks).
struct TileEntries {
  std::vector<int> first, end;
};
TileEntries tileEntries(const SoftSortBands& bands, const std::vector<int>& ranks);

// Per query tile A, the key tiles B = keyFirst[A] + j, j < keyCount[A], whose entry ranges meet A's;
// maxCount = the largest keyCount (the launch grid's y, at least 1).
struct TileSchedule {
  std::vector<int> keyFirst, keyCount;
  int maxCount = 1;
};
TileSchedule tileSchedule(const TileEntries& queryTiles, const TileEntries& keyTiles);

}  // namespace tl::cuda
