#pragma once
// Kernels of the band geometry |i − j| ≤ W on raw indices (the device side of core/ops/score_geometry.h
// BandScores; docs/operators/banded.md), the tiled forward of banded Sinkhorn: a row tile of 64 tokens visits
// only the key tiles that meet its band, scores are recomputed tile by tile (the dense kernels' FP32 score
// tile, score_tile.h) and entries off the band are −inf. Work O(n·(W + 64)·d) per pass, memory O(n·(d + d_v));
// the band of scores, O(n·W), is stored only when asked (BandScoresKernel).
//   BandLseKernel     : out_i = log Σ_{|i−j|≤W} exp(X_ij + shift_j); a row half-step uses (A, B) = (Q, K), a
//                       column half-step (K, Q) (the band is symmetric in raw indices). Its states feed the
//                       dense CloseHalfStepKernel with one key split.
//   BandCentreKernel  : the gauge (u − m, v + m), m = mean of the active u (the stopped base's centring).
//   BandApplyKernel   : O = A·V over the band, FlashAttention-style.
//   BandScoresKernel  : X on the band, slot s of row i holding X(i, i − W + s) (BandScores' layout), −inf off
//                       the support.
// Operands, padding and conventions as in dense_kernels.h.
#include "cuda/dense_kernels.h"

namespace tl::cuda {

// The key tiles of width BN that meet the band of rows [row0, row0 + BM): [first, last), empty when every
// row of the tile lies beyond the last key's band (a rectangle's inactive rows).
TL_HOST_DEVICE inline IndexRange bandKeyTiles(long long row0, int BM, int BN, long long W, long long nKeys) {
  const long long lo = row0 - W < 0 ? 0 : row0 - W;
  const long long hi = row0 + BM - 1 + W < nKeys - 1 ? row0 + BM - 1 + W : nKeys - 1;  // last key, inclusive
  if (lo > hi) return {0, 0};
  return {lo / BN, hi / BN + 1};
}

TL_HOST_DEVICE TL_FORCE_INLINE bool inBand(long long i, long long j, long long W) {
  return (i > j ? i - j : j - i) <= W;
}

// ---------------------------------------------------------------------------------------------------------
struct BandLseKernel {
  using Tile = Fp32Tile64;
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  struct Params {
    const float* aT;     // [batch][dPad][ldA]: the side whose LSE is taken (rows)
    const float* bT;     // [batch][dPad][ldB]: the side summed over (columns)
    const float* shift;  // [batch][ldB]: the columns' potential, −inf on inactive and padded columns
    float* states;       // [batch][ldA][2]: (m, s) of each row (CloseHalfStepKernel's layout, one split)
    int batch, dPad, nB;
    long long ldA, ldB, W;
    float scoreScale;    // 1/(√d·eps)
  };
  using Shared = RowLseState<Tile>::Shared;
  using Regs = RowLseState<Tile>::Regs;
  // x: row tiles, z: batch.
  static Grid grid(const Params& p, long long rows) { return {ceilDiv(rows, BM), 1, p.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long row0 = (long long)bi.x * BM, b = bi.z;
    const float* aT = p.aT + b * p.dPad * p.ldA;
    const float* bT = p.bT + b * p.dPad * p.ldB;
    const float* shift = p.shift + b * p.ldB;
    const IndexRange tiles = bandKeyTiles(row0, BM, BN, p.W, p.nB);
    typename Block::template Local<Regs> regs(block);
    const long long W = p.W;
    streamRowLse<Tile>(block, sh.operands, regs, aT, p.ldA, bT, p.ldB, shift, p.dPad, p.scoreScale, row0, tiles.first,
                       tiles.last, [W](long long i, long long j) { return inBand(i, j, W); });
    mergeRowLse<Tile>(block, sh.reduce, regs, p.states + (b * p.ldA + row0) * 2);
  }
};

// ---------------------------------------------------------------------------------------------------------
// One block per head: m = mean of the active row potentials (sums in double, merged in a fixed order), then
// ut − m on active rows and vt + m on active columns; m is recorded for the host, which keeps the raw duals
// (docs/operators/banded.md#definition: the plan is unchanged, the written duals are the uncentred ones).
struct BandCentreKernel {
  static constexpr int kThreads = 256;
  struct Params {
    float* ut;  // [batch][ldQ], −inf on inactive and padded rows
    float* vt;  // [batch][ldK]
    int nq, nk;
    long long ldQ, ldK;
    float* shifts;  // [batch][count]: m of each centring
    int count, index;
  };
  struct Shared {
    double sum[kThreads];
    long long active[kThreads];
    float m;
  };
  static Grid grid(int batch) { return {1, 1, batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long b = bi.z;
    float* ut = p.ut + b * p.ldQ;
    float* vt = p.vt + b * p.ldK;
    block.forEach([&](int tid) {
      double sum = 0;
      long long active = 0;
      for (long long i = tid; i < p.nq; i += kThreads)
        if (!isNegInf(ut[i])) {
          sum += double(ut[i]);
          ++active;
        }
      sh.sum[tid] = sum;
      sh.active[tid] = active;
    });
    block.sync();
    block.forEach([&](int tid) {
      if (tid != 0) return;
      double sum = 0;
      long long active = 0;
      for (int t = 0; t < kThreads; ++t) {  // fixed order: deterministic
        sum += sh.sum[t];
        active += sh.active[t];
      }
      sh.m = active > 0 ? float(sum / double(active)) : 0.f;
      p.shifts[b * p.count + p.index] = sh.m;
    });
    block.sync();
    block.forEach([&](int tid) {
      for (long long i = tid; i < p.nq; i += kThreads)
        if (!isNegInf(ut[i])) ut[i] -= sh.m;
      for (long long j = tid; j < p.nk; j += kThreads)
        if (!isNegInf(vt[j])) vt[j] += sh.m;
    });
  }
};

// ---------------------------------------------------------------------------------------------------------
struct BandApplyKernel {
  using Tile = Fp32Tile64;
  using Values = ValueProduct<Tile, kValueDimPad>;
  static constexpr int DVC = kValueDimPad;
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  struct Params {
    PlanTileParams tile;
    long long W;
    const float* v;  // [batch][ldK][dvPad]
    int dv, dvPad;
    float* out;  // [batch][nq][dv]
  };
  using Shared = ApplyTileState<Tile, Values>::Shared;
  using Regs = ApplyTileState<Tile, Values>::Regs;
  // x: row tiles, y: output column chunks, z: batch.
  static Grid grid(const Params& p) { return {ceilDiv(p.tile.nq, BM), p.dvPad / DVC, p.tile.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long row0 = (long long)bi.x * BM, b = bi.z;
    const IndexRange tiles = bandKeyTiles(row0, BM, BN, p.W, p.tile.nk);
    typename Block::template Local<Regs> regs(block);
    const long long W = p.W;
    applyPlanTiles<Tile, Values>(block, sh, regs, p.tile, p.v, p.dv, p.dvPad, p.out, b, row0, bi.y * DVC,
                                 tiles.first, tiles.last, [W](long long i, long long j) { return inBand(i, j, W); });
  }
};

// ---------------------------------------------------------------------------------------------------------
struct BandScoresKernel {
  using Tile = Fp32Tile64;
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  struct Params {
    const float *qT, *kT;  // [batch][dPad][ldQ], [batch][dPad][ldK]
    int batch, nq, nk, dPad;
    long long ldQ, ldK, W;
    float scoreScale;
    float* band;  // [batch][nq][2W + 1]
  };
  struct Shared {
    typename Tile::Operands operands;
  };
  struct Regs {
    float acc[TM][TN];
  };
  static Grid grid(const Params& p) { return {ceilDiv(p.nq, BM), 1, p.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long row0 = (long long)bi.x * BM, b = bi.z, width = 2 * p.W + 1;
    const float* qT = p.qT + b * p.dPad * p.ldQ;
    const float* kT = p.kT + b * p.dPad * p.ldK;
    float* band = p.band + b * p.nq * width;
    // Every slot of the tile's rows starts at −inf (off the support); the key tiles then write the support.
    block.forEach([&](int tid) {
      for (long long idx = tid; idx < BM * width; idx += kThreads) {
        const long long i = row0 + idx / width;
        if (i < p.nq) band[i * width + idx % width] = negInf();
      }
    });
    block.sync();
    const IndexRange tiles = bandKeyTiles(row0, BM, BN, p.W, p.nk);
    typename Block::template Local<Regs> regs(block);
    for (long long kt = tiles.first; kt < tiles.last; ++kt) {
      const long long col0 = kt * BN;
      Tile::product(block, sh.operands, p.dPad, [&](int tid) -> auto& { return regs[tid].acc; },
                    [&](int tid, int k0, typename Tile::Stage& st) {
                      Tile::loadAligned(tid, st, qT, p.ldQ, row0, kT, p.ldK, col0, k0);
                    });
      block.forEach([&](int tid) {
        TL_UNROLL
        for (int r = 0; r < TM; ++r) {
          const long long i = row0 + Tile::row(tid, r);
          TL_UNROLL
          for (int c = 0; c < TN; ++c) {
            const long long j = col0 + Tile::col(tid, c);
            if (i < p.nq && j < p.nk && inBand(i, j, p.W))
              band[i * width + (j - i + p.W)] = mulRn(regs[tid].acc[r][c], p.scoreScale);
          }
        }
      });
    }
  }
};

}  // namespace tl::cuda
