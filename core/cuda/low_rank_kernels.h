#pragma once
// Display-tile maxima of a low-rank plan A = F·G (LOT's glued factors, core/ops/lot/lot_coupling.h): F is
// n_q × r and G is r × n_k, passed as Gᵀ so that one key's r numbers are contiguous. Block means need no kernel
// (block sums of the factors, on the host); a block maximum needs every entry of the block, so each thread owns
// one display cell of a block row and evaluates its entries as r-long dot products, keeping only the running
// maximum: O(n_q·n_k·r) work, nothing stored but the cells. The threads of a warp read the same F entry at once
// (a broadcast) and neighbouring cells' keys.
#include "cuda/block.h"
#include "cuda/tile_index.h"

namespace tl::cuda {

struct LowRankMaxKernel {
  static constexpr int kThreads = 128;
  struct Params {
    const float* f;   // [nq][r]
    const float* gT;  // [nk][r]
    int nq, nk, r;
    int rows, cols;   // the display grid: rows ≤ nq, cols ≤ nk blocks (tile_index.h blockStart)
    float* max;       // [rows][cols]
  };
  struct Shared {};
  // x: block rows, y: groups of kThreads block columns.
  static Grid grid(const Params& p) { return {p.rows, ceilDiv(p.cols, kThreads), 1}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const long long cell = (long long)bi.y * kThreads + tid;
      if (cell >= p.cols) return;
      const long long rowBegin = blockStart(bi.x, p.nq, p.rows), rowEnd = blockStart(bi.x + 1, p.nq, p.rows);
      const long long keyBegin = blockStart(cell, p.nk, p.cols), keyEnd = blockStart(cell + 1, p.nk, p.cols);
      float max = 0.f;  // the factors are nonnegative, so every entry is ≥ 0
      for (long long i = rowBegin; i < rowEnd; ++i)
        for (long long j = keyBegin; j < keyEnd; ++j) {
          float a = 0.f;
          for (int l = 0; l < p.r; ++l) a = fmaF(p.f[i * p.r + l], p.gT[j * p.r + l], a);
          max = maxF(max, a);
        }
      p.max[(long long)bi.x * p.cols + cell] = max;
    });
  }
};

}  // namespace tl::cuda
