#pragma once
// Softmax attention in one pass (FlashAttention-2's forward; float32 FMAs, or TF32 tensor cores for the two
// tile products in FlashSoftmaxKernelT's TF32 instance, kernel_sets.h): for a tile of query
// rows it streams the keys once, keeps the running row max m_i and sum l_i = Σ_j exp(x_ij + vt_j − m_i), and
// accumulates Σ_j exp(x_ij + vt_j − m_i)·v_j, rescaled whenever m_i grows; S is never stored. It writes
//   O_i = scale·μ_i · (Σ_j exp(x_ij + vt_j − m_i) v_j) / l_i   (= Σ_j A_ij v_j of the T = 1 Sinkhorn plan),
//   and the row LSE state (m_i, l_i) in the LsePartialKernel layout (one split), so CloseHalfStepKernel turns
//   it into u_i = logμ_i − LSE_i exactly as for the first Sinkhorn half-step.
// vt is the key potential of softmax: 0 on active keys, −inf on inactive ones (core/ops/softmax/softmax.h).
#include "cuda/dense_kernels.h"

namespace tl::cuda {

template <class Tile_, class Values_>
struct FlashSoftmaxKernelT {
  using Tile = Tile_;
  using Values = Values_;
  static constexpr int DVC = kValueDimPad;
  static constexpr int kThreads = Tile::kThreads, BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN;
  static constexpr int TV = Values::TV;
  static constexpr int kMinBlocks = 2;  // ≤ 128 registers: two blocks (16 warps) per multiprocessor
  struct Params {
    PlanTileParams tile;       // ut unused: it is what this kernel computes
    const float* logMu;        // [nq]
    const float* v;            // [batch][ldK][dvPad]
    int dv, dvPad;
    float* out;                // [batch][nq][dv]
    float* states;             // [1][batch][ldQ][2] row (m, l), written by the blocks of output chunk 0
  };
  struct Shared {
    // Never live together: the product ends at a barrier after its last reads, the next one starts after the
    // barrier that ends the P·V phase.
    union {
      typename Tile::Operands operands;
      typename Values::Smem values;
    };
    float partMax[BM][Tile::kThreadsX];  // per-thread row maxima of the current tile; later row sums
    float rowMax[BM];                    // running max m_i (−inf until a finite score is seen)
    float alpha[BM];                     // exp(m_old − m_new): rescales what was accumulated
    float factor[BM];                    // scale·μ_i / l_i, applied once at the end
  };
  struct Regs {
    float x[TM][TN];  // scores of the tile, then exp(x − m)
    float o[TM][TV];
    float l[TM];      // this thread's share of l_i
  };
  static Grid grid(const Params& p) { return {ceilDiv(p.tile.nq, BM), p.dvPad / DVC, p.tile.batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const PlanTileParams& g = p.tile;
    const long long row0 = (long long)bi.x * BM, b = bi.z;
    const int c0 = bi.y * DVC;
    const float *qT = g.headQ(b), *kT = g.headK(b), *vt = g.headColPotential(b);
    const float* v = p.v + b * g.ldK * p.dvPad;
    typename Block::template Local<Regs> regs(block);
    block.forEach([&](int tid) {
      Values::zero(regs[tid].o);
      TL_UNROLL
      for (int r = 0; r < TM; ++r) regs[tid].l[r] = 0.f;
      if (tid < BM) sh.rowMax[tid] = negInf();
    });
    const long long keyTiles = ceilDiv(g.nk, BN);
    for (long long kt = 0; kt < keyTiles; ++kt) {
      const long long col0 = kt * BN;
      Tile::product(block, sh.operands, g.dPad, [&](int tid) -> auto& { return regs[tid].x; },
                    [&](int tid, int k0, typename Tile::Stage& st) {
                      Tile::loadAligned(tid, st, qT, g.ldQ, row0, kT, g.ldK, col0, k0);
                    });
      // Scores x = q·k/√d + vt (−inf on inactive and padded keys) and this thread's row maxima.
      block.forEach([&](int tid) {
        Regs& reg = regs[tid];
        float colPotential[TN];
        TL_UNROLL
        for (int c = 0; c < TN; c += 4) load4(vt + col0 + Tile::col(tid, c), &colPotential[c]);
        TL_UNROLL
        for (int r = 0; r < TM; ++r) {
          float m = negInf();
          TL_UNROLL
          for (int c = 0; c < TN; ++c) {
            reg.x[r][c] = mulRn(reg.x[r][c], g.scoreScale) + colPotential[c];
            m = maxF(m, reg.x[r][c]);
          }
          sh.partMax[Tile::row(tid, r)][Tile::tx(tid)] = m;
        }
      });
      block.sync();
      block.forEach([&](int tid) {
        if (tid >= BM) return;
        float m = sh.rowMax[tid];
        const float mOld = m;
        for (int t = 0; t < Tile::kThreadsX; ++t) m = maxF(m, sh.partMax[tid][t]);
        // m = −inf: nothing finite yet, nothing accumulated, keep factor 1. mOld = −inf: expF(−inf) = 0.
        sh.alpha[tid] = isNegInf(m) ? 1.f : expF(mOld - m);
        sh.rowMax[tid] = m;
      });
      block.sync();
      block.forEach([&](int tid) {
        Regs& reg = regs[tid];
        Values::loadValues(tid, sh.values, v, col0, p.dvPad, c0);  // in flight while the exponentials are computed
        TL_UNROLL
        for (int r = 0; r < TM; ++r) {
          const int row = Tile::row(tid, r);
          const float m = safeMax(sh.rowMax[row]), alpha = sh.alpha[row];
          float sum = 0.f;
          TL_UNROLL
          for (int c = 0; c < TN; ++c) {
            reg.x[r][c] = expF(reg.x[r][c] - m);  // −inf scores give exactly 0
            sum += reg.x[r][c];
          }
          reg.l[r] = reg.l[r] * alpha + sum;
          TL_UNROLL
          for (int c = 0; c < TV; ++c) reg.o[r][c] *= alpha;
        }
        Values::storePlan(tid, sh.values, reg.x);
        Values::waitLoads();
      });
      block.sync();
      block.forEach([&](int tid) { Values::accumulate(tid, sh.values, regs[tid].o); });
      block.sync();
    }
    // Row sums l_i from the per-thread shares (fixed order), the LSE state, and the output factor.
    block.forEach([&](int tid) {
      TL_UNROLL
      for (int r = 0; r < TM; ++r) sh.partMax[Tile::row(tid, r)][Tile::tx(tid)] = regs[tid].l[r];
    });
    block.sync();
    block.forEach([&](int tid) {
      if (tid >= BM) return;
      float l = 0.f;
      for (int t = 0; t < Tile::kThreadsX; ++t) l += sh.partMax[tid][t];
      const long long i = row0 + tid;
      const float target = i < g.nq ? marginalTarget(p.logMu[i], g.scale) : 0.f;
      sh.factor[tid] = l > 0.f ? target / l : 0.f;
      if (bi.y == 0) {
        float* state = p.states + (b * g.ldQ + i) * 2;
        state[0] = sh.rowMax[tid];
        state[1] = l;
      }
    });
    block.sync();
    block.forEach([&](int tid) {
      storeValueOutput<Values>(tid, regs[tid].o, p.out + b * g.nq * p.dv, row0, c0, g.nq, p.dv,
                               [&](int row) { return sh.factor[row]; });
    });
  }
};
using FlashSoftmaxKernel = FlashSoftmaxKernelT<Fp32Tile64, ValueProduct<Fp32Tile64, kValueDimPad>>;

}  // namespace tl::cuda
