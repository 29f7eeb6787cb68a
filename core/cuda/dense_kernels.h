#pragma once
// Kernels of the dense score geometry X = QKᵀ/(√d·eps) (the device side of core/ops/score_geometry.h),
// shared by every Sinkhorn-type family. Scores are recomputed tile by tile and never stored:
//   LsePartialKernel     : out_i = log Σ_j exp(X_ij + shift_j), streaming over a range of key tiles
//                          (online LSE); a row half-step uses (A, B) = (Q, K), a column half-step (K, Q).
//   CloseHalfStepKernel  : merges the key splits, closes the half-step (potential = log marginal − LSE),
//                          records the dual history and both marginal errors (sinkhorn_loop.h).
//   ApplyKernel          : O = A·V with A_ij = scale·exp(X_ij + ut_i + vt_j), FlashAttention-style.
//   PlanKernel           : the dense plan A (views and export only).
//   DisplayKernel        : block mean and block max of A on a ≤ R×C grid, without storing A.
// Operands are k-major, zero-padded float32 (convert_kernels.h); potentials are padded with −inf, so masked
// keys, inactive tokens and padding need no index tests in the streaming loops. Conventions: block.h.
// The kernels that form scores are templates over the score tile (and the P·V product): the names above are
// their FP32 instances (FMA tiles, score_tile.h); kernel_sets.h pairs them with the TF32 tensor-core instances
// (tf32_tile.h), which share everything but the tile products.
#include "cuda/block.h"
#include "cuda/half_step.h"
#include "cuda/online_lse.h"
#include "cuda/score_tile.h"
#include "cuda/tf32_tile.h"
#include "cuda/tile_index.h"

namespace tl::cuda {

// Lengths of a problem's padded axes: token axes to kTokenPad (a multiple of every tile size below), the
// head dimension to the chunk length BK, the value dimension to the output chunk DVC.
constexpr int kTokenPad = 128;
constexpr int kHeadDimPad = 16;
constexpr int kValueDimPad = 64;

// ---------------------------------------------------------------------------------------------------------
// The two phases of a row-LSE kernel, shared by LsePartialKernelT and band_kernels.h BandLseKernel (which
// differ only in the key tiles they visit and in which entries are on the support), and their state: the
// block's shared memory and each thread's registers (`regs[tid]`: the score tile `acc` and the per-row online
// LSE states `lse`).
template <class Tile>
struct RowLseState {
  union Shared {
    typename Tile::Operands operands;
    float reduce[Tile::BM][Tile::kThreadsX][2];  // per-thread (m, s) of every row, merged at the end
  };
  struct Regs {
    float acc[Tile::TM][Tile::TN];
    OnlineLse lse[Tile::TM];
  };
};

// Streams the key tiles [firstTile, lastTile) of the rows [row0, row0 + BM) into the per-row states, entries
// x_ij = X_ij + shift_j where onSupport(i, j), −inf elsewhere.
template <class Tile, class Block, class RegsArray, class OnSupport>
TL_HOST_DEVICE void streamRowLse(Block& block, typename Tile::Operands& operands, RegsArray& regs, const float* aT,
                                 long long ldA, const float* bT, long long ldB, const float* shift, int dPad,
                                 float scoreScale, long long row0, long long firstTile, long long lastTile,
                                 OnSupport&& onSupport) {
  for (long long kt = firstTile; kt < lastTile; ++kt) {
    const long long col0 = kt * Tile::BN;
    Tile::product(block, operands, dPad, [&](int tid) -> auto& { return regs[tid].acc; },
                  [&](int tid, int k0, typename Tile::Stage& st) {
                    Tile::loadAligned(tid, st, aT, ldA, row0, bT, ldB, col0, k0);
                  });
    // Registers and global memory only: the next tile's loads may overwrite the operands meanwhile.
    block.forEach([&](int tid) {
      auto& reg = regs[tid];
      float colShift[Tile::TN];
      TL_UNROLL
      for (int c = 0; c < Tile::TN; c += 4) load4(shift + col0 + Tile::col(tid, c), &colShift[c]);
      TL_UNROLL
      for (int r = 0; r < Tile::TM; ++r) {
        const long long i = row0 + Tile::row(tid, r);
        float x[Tile::TN];
        TL_UNROLL
        for (int c = 0; c < Tile::TN; ++c)
          x[c] = onSupport(i, col0 + Tile::col(tid, c)) ? mulRn(reg.acc[r][c], scoreScale) + colShift[c] : negInf();
        reg.lse[r].addTile(x);
      }
    });
  }
}

// Merges the kThreadsX partial states of every row in a fixed order (deterministic) and writes row row0 + t's
// (m, s) to rowStates[2t], [2t + 1]. `reduce` overlays the operands; the sync after the last accumulate phase
// already ordered those reads, the first one here keeps the layout safe whatever the loop before becomes.
template <class Tile, class Block, class RegsArray>
TL_HOST_DEVICE void mergeRowLse(Block& block, float (&reduce)[Tile::BM][Tile::kThreadsX][2], RegsArray& regs,
                                float* rowStates) {
  block.sync();
  block.forEach([&](int tid) {
    TL_UNROLL
    for (int r = 0; r < Tile::TM; ++r) {
      reduce[Tile::row(tid, r)][Tile::tx(tid)][0] = regs[tid].lse[r].m;
      reduce[Tile::row(tid, r)][Tile::tx(tid)][1] = regs[tid].lse[r].s;
    }
  });
  block.sync();
  block.forEach([&](int tid) {
    if (tid >= Tile::BM) return;
    OnlineLse total;
    for (int t = 0; t < Tile::kThreadsX; ++t) total.merge(OnlineLse{reduce[tid][t][0], reduce[tid][t][1]});
    rowStates[tid * 2] = total.m;
    rowStates[tid * 2 + 1] = total.s;
  });
}

// ---------------------------------------------------------------------------------------------------------
template <class Tile_>
struct LsePartialKernelT {
  using Tile = Tile_;
  static_assert(Tile::BM == 128 && Tile::BN == 128, "launch choices (denseLayout) assume 128 × 128 tiles");
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  static constexpr int kMinBlocks = 2;  // ≤ 128 registers: two blocks (16 warps) per multiprocessor
  struct Params {
    const float* aT;     // [batch][dPad][ldA]: the side whose LSE is taken (rows)
    const float* bT;     // [batch][dPad][ldB]: the side summed over (columns)
    const float* shift;  // [batch][ldB]: the columns' potential, −inf on inactive and padded columns
    float* states;       // [splits][batch][ldA][2]: partial (m, s) of each row, per key split
    int batch, dPad;
    long long ldA, ldB;
    float scoreScale;    // 1/(√d·eps)
    int keyTiles, splits;
  };
  using Shared = typename RowLseState<Tile>::Shared;
  using Regs = typename RowLseState<Tile>::Regs;
  // x: row tiles, y: key splits, z: batch.
  static Grid grid(const Params& p, long long rows) { return {ceilDiv(rows, BM), p.splits, p.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long row0 = (long long)bi.x * BM, b = bi.z;
    const float* aT = p.aT + b * p.dPad * p.ldA;
    const float* bT = p.bT + b * p.dPad * p.ldB;
    const float* shift = p.shift + b * p.ldB;
    const IndexRange tiles = splitRange(p.keyTiles, p.splits, bi.y);
    typename Block::template Local<Regs> regs(block);
    streamRowLse<Tile>(block, sh.operands, regs, aT, p.ldA, bT, p.ldB, shift, p.dPad, p.scoreScale, row0, tiles.first,
                       tiles.last, [](long long, long long) { return true; });  // masked keys: −inf shifts
    mergeRowLse<Tile>(block, sh.reduce, regs, p.states + (((long long)bi.y * p.batch + b) * p.ldA + row0) * 2);
  }
};
using LsePartialKernel = LsePartialKernelT<ScoreTile<128, 128, 8, 8, kHeadDimPad>>;

// ---------------------------------------------------------------------------------------------------------
struct CloseHalfStepKernel {
  static constexpr int kThreads = 256;
  struct Params {
    const float* states;       // [splits][batch][ld][2] from LsePartialKernel
    int splits, batch, n;
    long long ld;
    const float* logMarginal;  // [n] this side's log marginal (transport scale), shared by the batch
    const float* target;       // [n] this side's attention-scale target (half_step.h marginalTarget)
    float* potential;          // [batch][ld] this side's potential in eps units; updated when `update`
    float eps, scale;
    float* history;            // [batch][steps][n] potentials in score coordinates after each step, or null
    double* errors;            // [batch][steps][4] (rowMax, rowMean, colMax, colMean), or null
    int steps;                 // the budget T (rows of history and errors)
    int step;                  // this half-step t, 1-based
    int errorOffset;           // 0: this is the row side, 2: the column side
    int update;                // t ≤ T: close the half-step (write the new potential)
    int recordOpen;            // t > 1 and errors: the previous plan's error on this side
  };
  struct Shared {
    double open[kThreads][2];   // per-thread (max, sum) of the previous plan's deviations
    double close[kThreads][2];  // the same for the new plan
  };
  struct Regs {
    SideErrorAccumulator open, close;
  };
  static Grid grid(const Params& p) { return {p.batch, 1, 1}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long b = bi.x;
    typename Block::template Local<Regs> regs(block);
    block.forEach([&](int tid) {
      Regs& reg = regs[tid];
      for (long long i = tid; i < p.n; i += kThreads) {
        OnlineLse state;
        for (int s = 0; s < p.splits; ++s) {
          const float* st = p.states + (((long long)s * p.batch + b) * p.ld + i) * 2;
          state.merge(OnlineLse{st[0], st[1]});
        }
        const float lse = state.finalize();
        float* potential = p.potential + b * p.ld + i;
        // The side that is not normalised yet: sums of the plan before this step (its other side closed).
        if (p.recordOpen) reg.open.add(marginalSum(*potential, lse, p.scale), p.target[i]);
        if (p.update) {
          const float closed = closure(p.logMarginal[i], lse);
          *potential = closed;
          if (p.history) p.history[(b * p.steps + p.step - 1) * p.n + i] = p.eps * closed;
          reg.close.add(marginalSum(closed, lse, p.scale), p.target[i]);
        }
      }
      sh.open[tid][0] = reg.open.max;
      sh.open[tid][1] = reg.open.sum;
      sh.close[tid][0] = reg.close.max;
      sh.close[tid][1] = reg.close.sum;
    });
    block.sync();
    block.forEach([&](int tid) {
      if (tid != 0 || !p.errors) return;
      SideErrorAccumulator open, close;
      for (int t = 0; t < kThreads; ++t) {  // fixed order: deterministic
        open.merge(SideErrorAccumulator{sh.open[t][0], sh.open[t][1]});
        close.merge(SideErrorAccumulator{sh.close[t][0], sh.close[t][1]});
      }
      double* e = p.errors + b * p.steps * 4 + p.errorOffset;
      if (p.recordOpen) {
        e[(p.step - 2) * 4] = open.max;
        e[(p.step - 2) * 4 + 1] = open.mean(p.n);
      }
      if (p.update) {
        e[(p.step - 1) * 4] = close.max;
        e[(p.step - 1) * 4 + 1] = close.mean(p.n);
      }
    });
  }
};

// ---------------------------------------------------------------------------------------------------------
// Shared by the kernels that evaluate plan entries tile by tile from the final potentials.
struct PlanTileParams {
  const float* qT;  // [batch][dPad][ldQ]
  const float* kT;  // [batch][dPad][ldK]
  const float* ut;  // [batch][ldQ] row potential (eps units), −inf on inactive and padded rows
  const float* vt;  // [batch][ldK] column potential, −inf on inactive and padded columns
  int batch, nq, nk, dPad;
  long long ldQ, ldK;
  float scoreScale, scale;

  // Head b's slices of the operands, shared by every kernel that walks plan tiles.
  TL_HOST_DEVICE const float* headQ(long long b) const { return qT + b * dPad * ldQ; }
  TL_HOST_DEVICE const float* headK(long long b) const { return kT + b * dPad * ldK; }
  TL_HOST_DEVICE const float* headRowPotential(long long b) const { return ut + b * ldQ; }
  TL_HOST_DEVICE const float* headColPotential(long long b) const { return vt + b * ldK; }
};

// O += P·V on one key tile, shared by ApplyKernel and FlashSoftmaxKernel: the BM×BN plan tile and a BN×DVC
// tile of V in shared memory; each thread owns the score tile's TM rows × TV consecutive output columns.
// The interface of every value product (tf32_tile.h Tf32ValueProduct is the tensor-core variant): Smem, zero,
// storePlan (the thread's plan entries), loadValues then waitLoads (before the phase's barrier), accumulate,
// outCol(tid, c) = tx(tid)·TV + c.
template <class Tile, int DVC>
struct ValueProduct {
  using TileType = Tile;
  static constexpr int BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN, TV = DVC / Tile::kThreadsX;
  static_assert(TV == 4, "one 16-byte vector of output columns per thread");
  struct Smem {
    alignas(16) float p[BM][BN + 4];  // the plan tile; +4 keeps rows 16-byte aligned and spreads banks
    alignas(16) float v[BN][DVC];
  };
  TL_HOST_DEVICE static constexpr int outCol(int tid, int c) { return Tile::tx(tid) * TV + c; }

  TL_HOST_DEVICE static void zero(float (&o)[TM][TV]) {
    TL_UNROLL
    for (int r = 0; r < TM; ++r) {
      TL_UNROLL
      for (int c = 0; c < TV; ++c) o[r][c] = 0.f;
    }
  }
  // The thread's plan micro-tile.
  TL_HOST_DEVICE static void storePlan(int tid, Smem& sm, const float (&entries)[TM][TN]) {
    TL_UNROLL
    for (int r = 0; r < TM; ++r) {
      TL_UNROLL
      for (int c = 0; c < TN; c += 4) store4(&sm.p[Tile::row(tid, r)][Tile::col(tid, c)], &entries[r][c]);
    }
  }
  // Rows [col0, col0 + BN), columns [c0, c0 + DVC) of one head's v ([ld][dvPad], zero-padded).
  TL_HOST_DEVICE static void loadValues(int tid, Smem& sm, const float* v, long long col0, int dvPad, int c0) {
    for (int idx = tid; idx < BN * DVC / 4; idx += Tile::kThreads) {
      const int j = idx / (DVC / 4), c = (idx % (DVC / 4)) * 4;
      load4(v + (col0 + j) * dvPad + c0 + c, &sm.v[j][c]);
    }
  }
  TL_HOST_DEVICE static void waitLoads() {}  // loadValues is synchronous
  // o[r][c] += Σ_j p[row(r)][j] · v[j][outCol(c)], in increasing j.
  TL_HOST_DEVICE static void accumulate(int tid, const Smem& sm, float (&o)[TM][TV]) {
    for (int j = 0; j < BN; ++j) {
      float vv[TV];
      load4(&sm.v[j][outCol(tid, 0)], vv);
      TL_UNROLL
      for (int r = 0; r < TM; ++r) {
        const float a = sm.p[Tile::row(tid, r)][j];
        TL_UNROLL
        for (int c = 0; c < TV; ++c) o[r][c] = fmaF(a, vv[c], o[r][c]);
      }
    }
  }
};

// out[i][c] = factor(row) · o for the thread's rows i < nq and columns c < dv of one head's out [nq][dv], for
// either value product.
template <class Values, class Factor>
TL_HOST_DEVICE void storeValueOutput(int tid, const float (&o)[Values::TM][Values::TV], float* out, long long row0,
                                     int c0, int nq, int dv, Factor&& factor) {
  using Tile = typename Values::TileType;
  TL_UNROLL
  for (int r = 0; r < Values::TM; ++r) {
    const long long i = row0 + Tile::row(tid, r);
    const float f = factor(Tile::row(tid, r));
    TL_UNROLL
    for (int c = 0; c < Values::TV; ++c) {
      const int col = c0 + Values::outCol(tid, c);
      if (i < nq && col < dv) out[i * dv + col] = o[r][c] * f;
    }
  }
}

// The FP32 and TF32 score tiles of the kernels below (64 × 64, 256 threads) and their P·V products.
using Fp32Tile64 = ScoreTile<64, 64, 4, 4, kHeadDimPad>;
using Tf32Tile64 = Tf32ScoreTile<64, 64, 2, 4, kHeadDimPad>;

// The body of an A·V kernel, shared by ApplyKernelT and band_kernels.h BandApplyKernel (which differ only in
// the key tiles they visit and in which entries are on the support): O = A·V for the rows [row0, row0 + BM)
// and the output columns [c0, c0 + kValueDimPad) of head b, streaming the key tiles [firstTile, lastTile),
// with A_ij = 0 where !onSupport(i, j). Its state (ApplyTileState): the block's `operands` and P·V tiles
// `values`, never live together (the product ends at a barrier after its last reads, and the next product
// starts after the barrier that ends the P·V phase), and each thread's `acc` (scores, then plan entries), `o`
// and `ut`.
template <class Tile, class Values>
struct ApplyTileState {
  union Shared {
    typename Tile::Operands operands;
    typename Values::Smem values;
  };
  struct Regs {
    float acc[Tile::TM][Tile::TN];  // scores, then plan entries
    float o[Tile::TM][Values::TV];
    float ut[Tile::TM];
  };
};

template <class Tile, class Values, class Block, class SharedT, class RegsArray, class OnSupport>
TL_HOST_DEVICE void applyPlanTiles(Block& block, SharedT& sh, RegsArray& regs, const PlanTileParams& g,
                                   const float* values, int dv, int dvPad, float* out, long long b, long long row0,
                                   int c0, long long firstTile, long long lastTile, OnSupport&& onSupport) {
  const float *qT = g.headQ(b), *kT = g.headK(b), *vt = g.headColPotential(b);
  const float* v = values + b * g.ldK * dvPad;
  block.forEach([&](int tid) {
    Values::zero(regs[tid].o);
    TL_UNROLL
    for (int r = 0; r < Tile::TM; ++r) regs[tid].ut[r] = g.ut[b * g.ldQ + row0 + Tile::row(tid, r)];
  });
  for (long long kt = firstTile; kt < lastTile; ++kt) {
    const long long col0 = kt * Tile::BN;
    Tile::product(block, sh.operands, g.dPad, [&](int tid) -> auto& { return regs[tid].acc; },
                  [&](int tid, int k0, typename Tile::Stage& st) {
                    Tile::loadAligned(tid, st, qT, g.ldQ, row0, kT, g.ldK, col0, k0);
                  });
    block.forEach([&](int tid) {
      auto& reg = regs[tid];
      Values::loadValues(tid, sh.values, v, col0, dvPad, c0);  // in flight while the entries are computed
      float colPotential[Tile::TN];
      TL_UNROLL
      for (int c = 0; c < Tile::TN; c += 4) load4(vt + col0 + Tile::col(tid, c), &colPotential[c]);
      TL_UNROLL
      for (int r = 0; r < Tile::TM; ++r) {
        const long long i = row0 + Tile::row(tid, r);
        TL_UNROLL
        for (int c = 0; c < Tile::TN; ++c) {
          const float x = onSupport(i, col0 + Tile::col(tid, c)) ? mulRn(reg.acc[r][c], g.scoreScale) : negInf();
          reg.acc[r][c] = planEntry(x, reg.ut[r], colPotential[c], g.scale);  // off the support: exp(−inf) = 0
        }
      }
      Values::storePlan(tid, sh.values, reg.acc);
      Values::waitLoads();
    });
    block.sync();
    block.forEach([&](int tid) { Values::accumulate(tid, sh.values, regs[tid].o); });
    block.sync();
  }
  block.forEach([&](int tid) {
    storeValueOutput<Values>(tid, regs[tid].o, out + b * g.nq * dv, row0, c0, g.nq, dv, [](int) { return 1.f; });
  });
}

template <class Tile_, class Values_>
struct ApplyKernelT {
  using Tile = Tile_;
  using Values = Values_;
  static constexpr int DVC = kValueDimPad;  // output columns per block
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  static constexpr int kMinBlocks = 2;  // ≤ 128 registers: two blocks (16 warps) per multiprocessor
  struct Params {
    PlanTileParams tile;
    const float* v;  // [batch][ldK][dvPad]
    int dv, dvPad;
    float* out;  // [batch][nq][dv]
  };
  using Shared = typename ApplyTileState<Tile, Values>::Shared;
  using Regs = typename ApplyTileState<Tile, Values>::Regs;
  // x: row tiles, y: output column chunks, z: batch.
  static Grid grid(const Params& p) { return {ceilDiv(p.tile.nq, BM), p.dvPad / DVC, p.tile.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long row0 = (long long)bi.x * BM, b = bi.z;
    typename Block::template Local<Regs> regs(block);
    applyPlanTiles<Tile, Values>(block, sh, regs, p.tile, p.v, p.dv, p.dvPad, p.out, b, row0, bi.y * DVC, 0,
                                 ceilDiv(p.tile.nk, BN), [](long long, long long) { return true; });
  }
};
using ApplyKernel = ApplyKernelT<Fp32Tile64, ValueProduct<Fp32Tile64, kValueDimPad>>;

// ---------------------------------------------------------------------------------------------------------
template <class Tile_>
struct PlanKernelT {
  using Tile = Tile_;
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  struct Params {
    PlanTileParams tile;
    float* plan;  // [batch][nq][nk], attention scale
  };
  struct Shared {
    typename Tile::Operands operands;
  };
  struct Regs {
    float acc[TM][TN];
  };
  // x: (row tile, column tile) pairs, flattened so that neither count meets the 65535 limit of y; z: batch.
  static Grid grid(const Params& p) { return {ceilDiv(p.tile.nq, BM) * ceilDiv(p.tile.nk, BN), 1, p.tile.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const PlanTileParams& g = p.tile;
    const long long colTiles = ceilDiv(g.nk, BN);
    const long long row0 = bi.x / colTiles * BM, col0 = bi.x % colTiles * BN, b = bi.z;
    const float *qT = g.headQ(b), *kT = g.headK(b);
    typename Block::template Local<Regs> regs(block);
    Tile::product(block, sh.operands, g.dPad, [&](int tid) -> auto& { return regs[tid].acc; },
                  [&](int tid, int k0, typename Tile::Stage& st) {
                    Tile::loadAligned(tid, st, qT, g.ldQ, row0, kT, g.ldK, col0, k0);
                  });
    block.forEach([&](int tid) {
      TL_UNROLL
      for (int r = 0; r < TM; ++r) {
        const long long i = row0 + Tile::row(tid, r);
        if (i >= g.nq) continue;
        const float ut = g.ut[b * g.ldQ + i];
        TL_UNROLL
        for (int c = 0; c < TN; ++c) {
          const long long j = col0 + Tile::col(tid, c);
          if (j < g.nk)
            p.plan[(b * g.nq + i) * g.nk + j] =
                planEntry(mulRn(regs[tid].acc[r][c], g.scoreScale), ut, g.vt[b * g.ldK + j], g.scale);
        }
      }
    });
  }
};
using PlanKernel = PlanKernelT<Fp32Tile64>;

// ---------------------------------------------------------------------------------------------------------
// Display tiles: the plan pooled onto rows' × cols' blocks (tile_index.h blockStart), rows' = min(nq, R),
// cols' = min(nk, C). One thread block per (block row, group of block columns, head); it streams the plan
// entries of its block row through registers and adds them to its cells in a fixed order (deterministic).
template <class Tile_>
struct DisplayKernelT {
  using Tile = Tile_;
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  static constexpr int kMinBlocks = 2;  // ≤ 128 registers: two blocks (16 warps) per multiprocessor
  static constexpr int kMaxCellsPerBlock = 1024;  // block columns one thread block accumulates
  static_assert(BN <= kThreads, "one thread per block column touched by a key tile");
  struct Params {
    PlanTileParams tile;
    int rows, cols;       // rows' and cols' of the display grid
    int cellsPerGroup;    // block columns per thread block (≤ kMaxCellsPerBlock)
    float* mean;          // [batch][rows][cols] block mean of A
    float* max;           // [batch][rows][cols] block max of A
  };
  struct Shared {
    typename Tile::Operands operands;
    float partSum[Tile::kThreadsY][BN];  // column sums over each thread row's TM plan rows
    float partMax[Tile::kThreadsY][BN];
    double tileSum[BN];                  // column sums over the block row's rows in this tile
    float tileMax[BN];
    double cellSum[kMaxCellsPerBlock];
    float cellMax[kMaxCellsPerBlock];
  };
  struct Regs {
    float acc[TM][TN];
  };
  // x: block rows, y: groups of block columns, z: batch.
  static Grid grid(const Params& p) { return {p.rows, ceilDiv(p.cols, p.cellsPerGroup), p.tile.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const PlanTileParams& g = p.tile;
    const long long b = bi.z;
    const long long rowBegin = blockStart(bi.x, g.nq, p.rows), rowEnd = blockStart(bi.x + 1, g.nq, p.rows);
    const long long cellBegin = (long long)bi.y * p.cellsPerGroup;
    const long long cellEnd = cellBegin + p.cellsPerGroup < p.cols ? cellBegin + p.cellsPerGroup : p.cols;
    const long long keyBegin = blockStart(cellBegin, g.nk, p.cols), keyEnd = blockStart(cellEnd, g.nk, p.cols);
    const float *qT = g.headQ(b), *kT = g.headK(b), *ut = g.headRowPotential(b), *vt = g.headColPotential(b);
    typename Block::template Local<Regs> regs(block);
    block.forEach([&](int tid) {
      for (long long c = tid; c < cellEnd - cellBegin; c += kThreads) {
        sh.cellSum[c] = 0.0;
        sh.cellMax[c] = 0.f;
      }
    });
    for (long long row0 = rowBegin; row0 < rowEnd; row0 += BM) {
      for (long long col0 = keyBegin; col0 < keyEnd; col0 += BN) {
        Tile::product(block, sh.operands, g.dPad, [&](int tid) -> auto& { return regs[tid].acc; },
                      [&](int tid, int k0, typename Tile::Stage& st) {
                        Tile::loadGuarded(tid, st, qT, g.ldQ, row0, rowEnd, kT, g.ldK, col0, keyEnd, k0);
                      });
        // Plan entries outside [rowBegin, rowEnd) × [keyBegin, keyEnd) count as 0 (A ≥ 0, so max starts at 0).
        block.forEach([&](int tid) {
          TL_UNROLL
          for (int c = 0; c < TN; ++c) {
            const long long j = col0 + Tile::col(tid, c);
            float sum = 0.f, max = 0.f;
            TL_UNROLL
            for (int r = 0; r < TM; ++r) {
              const long long i = row0 + Tile::row(tid, r);
              if (i < rowEnd && j < keyEnd) {
                const float a = planEntry(mulRn(regs[tid].acc[r][c], g.scoreScale), ut[i], vt[j], g.scale);
                sum += a;
                max = maxF(max, a);
              }
            }
            sh.partSum[Tile::ty(tid)][Tile::col(tid, c)] = sum;
            sh.partMax[Tile::ty(tid)][Tile::col(tid, c)] = max;
          }
        });
        block.sync();
        block.forEach([&](int tid) {
          if (tid >= BN) return;
          double sum = 0.0;
          float max = 0.f;
          for (int t = 0; t < Tile::kThreadsY; ++t) {
            sum += double(sh.partSum[t][tid]);
            max = maxF(max, sh.partMax[t][tid]);
          }
          sh.tileSum[tid] = sum;
          sh.tileMax[tid] = max;
        });
        block.sync();
        // One thread per block column that this key tile touches adds the tile's columns in order.
        block.forEach([&](int tid) {
          const long long lo = col0, hi = col0 + BN < keyEnd ? col0 + BN : keyEnd;
          const long long cell = blockOf(lo, g.nk, p.cols) + tid;
          if (cell > blockOf(hi - 1, g.nk, p.cols)) return;
          const long long s = blockStart(cell, g.nk, p.cols), e = blockStart(cell + 1, g.nk, p.cols);
          for (long long j = s > lo ? s : lo; j < (e < hi ? e : hi); ++j) {
            sh.cellSum[cell - cellBegin] += sh.tileSum[j - col0];
            sh.cellMax[cell - cellBegin] = maxF(sh.cellMax[cell - cellBegin], sh.tileMax[j - col0]);
          }
        });
        // No sync needed here: tileSum/partSum are next written after the next tile's k-loop syncs.
      }
    }
    block.sync();
    block.forEach([&](int tid) {
      for (long long c = cellBegin + tid; c < cellEnd; c += kThreads) {
        const double count = double(rowEnd - rowBegin) * double(blockStart(c + 1, g.nk, p.cols) - blockStart(c, g.nk, p.cols));
        const long long out = (b * p.rows + bi.x) * p.cols + c;
        p.mean[out] = float(sh.cellSum[c - cellBegin] / count);
        p.max[out] = sh.cellMax[c - cellBegin];
      }
    });
  }
};
using DisplayKernel = DisplayKernelT<Fp32Tile64>;

}  // namespace tl::cuda
