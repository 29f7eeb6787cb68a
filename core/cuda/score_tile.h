#pragma once
// One BM×BN tile of dot products q_i·k_j (FlashAttention's S tile) computed by a thread block from k-major,
// zero-padded float32 operands: aT[k][i] (k < dPad, i < ld). Each thread owns a TM×TN register micro-tile
// whose rows/columns follow microIndex (tile_index.h). The operands stream through shared memory in chunks
// of BK along d; the dot products accumulate with one fused multiply-add per k, in increasing k, so q_i·k_j
// is bit-identical whichever operand plays rows (row and column half-steps see the same scores).
//
// The interface every score tile offers the kernels (tf32_tile.h Tf32ScoreTile is the tensor-core variant):
// BM, BN, TM, TN, kThreads, kThreadsX, kThreadsY; row(tid, r) / col(tid, c), the tile row (column) of register
// slot r (c), depending on tid only through ty(tid) (tx(tid)), every (row, column) owned by exactly one
// (thread, r, c), columns c … c + 3 consecutive and 16-byte aligned for c % 4 = 0; Stage (one chunk of both
// operands) and Operands (kStages of them); loadAligned / loadGuarded into a Stage; product; accumulate.
#include "cuda/block.h"
#include "cuda/tile_index.h"

namespace tl::cuda {

template <int BM_, int BN_, int TM_, int TN_, int BK_>
struct ScoreTile {
  static constexpr int BM = BM_, BN = BN_, TM = TM_, TN = TN_, BK = BK_;
  static constexpr int kThreadsX = BN / TN;  // threads along the columns (keys of a row half-step)
  static constexpr int kThreadsY = BM / TM;  // threads along the rows
  static constexpr int kThreads = kThreadsX * kThreadsY;
  static_assert(BM % TM == 0 && BN % TN == 0, "tile must split into micro-tiles");
  static_assert(TM % 4 == 0 && TN % 4 == 0, "micro-tiles are read as 16-byte vectors");
  static_assert(BM % 4 == 0 && BN % 4 == 0, "tiles are loaded as 16-byte vectors");

  // Chunk [k0, k0 + BK) of both operand tiles, k-major like the operands.
  struct Stage {
    alignas(16) float a[BK][BM];
    alignas(16) float b[BK][BN];
  };
  static constexpr int kStages = 1;
  struct Operands {
    Stage stage[kStages];
  };

  TL_HOST_DEVICE static constexpr int tx(int tid) { return tid % kThreadsX; }
  TL_HOST_DEVICE static constexpr int ty(int tid) { return tid / kThreadsX; }
  // Row (column) inside the tile of the thread's register slot r (c).
  TL_HOST_DEVICE static constexpr int row(int tid, int r) { return microIndex(ty(tid), r, TM, kThreadsY); }
  TL_HOST_DEVICE static constexpr int col(int tid, int c) { return microIndex(tx(tid), c, TN, kThreadsX); }

  TL_HOST_DEVICE static void zero(float (&acc)[TM][TN]) {
    TL_UNROLL
    for (int r = 0; r < TM; ++r) {
      TL_UNROLL
      for (int c = 0; c < TN; ++c) acc[r][c] = 0.f;
    }
  }

  // Loads chunk k0 with 16-byte loads: a[k][r] = aT[(k0 + k)·ldA + row0 + r]. Requires row0 and ldA to be
  // multiples of 4, row0 + BM ≤ ldA, col0 + BN ≤ ldB and k0 + BK ≤ dPad (padded buffers guarantee it).
  TL_HOST_DEVICE static void loadAligned(int tid, Stage& sm, const float* aT, long long ldA, long long row0,
                                         const float* bT, long long ldB, long long col0, int k0) {
    constexpr int kVecA = BK * BM / 4, kVecB = BK * BN / 4;
    for (int v = tid; v < kVecA; v += kThreads) {
      const int k = v / (BM / 4), r = (v % (BM / 4)) * 4;
      load4(aT + (k0 + k) * ldA + row0 + r, &sm.a[k][r]);
    }
    for (int v = tid; v < kVecB; v += kThreads) {
      const int k = v / (BN / 4), c = (v % (BN / 4)) * 4;
      load4(bT + (k0 + k) * ldB + col0 + c, &sm.b[k][c]);
    }
  }

  // The same for any row0/col0: element loads, and rows (columns) at or beyond limitA (limitB) read as 0.
  TL_HOST_DEVICE static void loadGuarded(int tid, Stage& sm, const float* aT, long long ldA, long long row0,
                                         long long limitA, const float* bT, long long ldB, long long col0,
                                         long long limitB, int k0) {
    for (int v = tid; v < BK * BM; v += kThreads) {
      const int k = v / BM, r = v % BM;
      sm.a[k][r] = row0 + r < limitA ? aT[(k0 + k) * ldA + row0 + r] : 0.f;
    }
    for (int v = tid; v < BK * BN; v += kThreads) {
      const int k = v / BN, c = v % BN;
      sm.b[k][c] = col0 + c < limitB ? bT[(k0 + k) * ldB + col0 + c] : 0.f;
    }
  }

  // The whole head dimension for one tile: zero the accumulators, then chunk by chunk a load phase
  // (`load(tid, k0, stage)` fills the Stage `stage`, e.g. with loadAligned) and an accumulate phase, each
  // ending at a barrier. `acc(tid)` is thread tid's accumulator array. The product starts with writes to the
  // operands and ends at a barrier after its last reads.
  template <class Block, class Acc, class Load>
  TL_HOST_DEVICE static void product(Block& block, Operands& sm, int dPad, Acc&& acc, Load&& load) {
    block.forEach([&](int tid) { zero(acc(tid)); });
    for (int k0 = 0; k0 < dPad; k0 += BK) {
      block.forEach([&](int tid) { load(tid, k0, sm.stage[0]); });
      block.sync();
      block.forEach([&](int tid) { accumulate(tid, sm.stage[0], acc(tid)); });
      block.sync();
    }
  }

  // acc[r][c] += Σ_k a[k][row(r)] · b[k][col(c)] over the chunk, one FMA per k in increasing k.
  TL_HOST_DEVICE static void accumulate(int tid, const Stage& sm, float (&acc)[TM][TN]) {
    TL_UNROLL
    for (int k = 0; k < BK; ++k) {
      float a[TM], b[TN];
      TL_UNROLL
      for (int r = 0; r < TM; r += 4) load4(&sm.a[k][row(tid, r)], &a[r]);
      TL_UNROLL
      for (int c = 0; c < TN; c += 4) load4(&sm.b[k][col(tid, c)], &b[c]);
      TL_UNROLL
      for (int r = 0; r < TM; ++r) {
        TL_UNROLL
        for (int c = 0; c < TN; ++c) acc[r][c] = fmaF(a[r], b[c], acc[r][c]);
      }
    }
  }
};

}  // namespace tl::cuda
