#pragma once
// The TF32 tensor-core variant of the score tile (score_tile.h ScoreTile) and of the P·V product
// (dense_kernels.h ValueProduct), used by the kernels when CudaOptions::tf32 is set. These classes have the
// same interface as their FP32 counterparts (the tile and thread-grid sizes, row/col/tx/ty of every register
// slot, Operands, product, ...), so every other part of a kernel body — potentials, the streaming
// log-sum-exp, masking and the −inf guards, plan entries, reductions — is one shared code path.
//
// Arithmetic. Operands are rounded to TF32 (10 explicit mantissa bits, to nearest with ties away from zero:
// cvt.rna.tf32.f32, toTf32 below) where they are produced: q, k and v by the conversion kernels
// (convert_kernels.h), the plan tile P when it is stored for P·V. Tiles multiply them with
// mma.sync.aligned.m16n8k8 .tf32 (8 k per instruction) and accumulate in float32. TF32 products are exact in
// float32; how the tensor core adds the 8 products of one instruction to the accumulator (order, intermediate
// precision) is implementation-defined, so TF32 scores differ from the exact dot products of the rounded
// operands by float32-sized accumulation errors, and from the FP32 path's by the operand rounding: relative
// 2^-11 per operand, i.e. |Δ(q·k)| ≤ (2^-10 + 2^-22)·Σ_k |q_k k_k| before accumulation errors.
//
// Layout (fragments as in the PTX ISA for mma.m16n8k8; lane = 4·groupID + threadID_in_group). A warp computes
// a WM × WN block as (WM/16) × (WN/8) fragments; fragment rows and columns map to block rows and columns so
// that (1) each pair of A (or B) registers a lane loads is one 8-byte shared-memory load, conflict-free with
// rows padded to ≡ 8 (mod 32) floats, and (2) a thread owns, per 16-row fragment, 2 adjacent rows and, per
// 16-column pair of fragments, 4 consecutive columns (the kernels move potentials and plan rows as 16-byte
// vectors). A thread's rows depend only on (warp row, groupID) and its columns only on (warp column,
// threadID_in_group), which gives the kThreadsY × kThreadsX thread grid the shared kernel bodies expect.
//
// Without a GPU: on the CPU, Tf32WarpMma::step emulates one warp instruction for one lane. It gathers the
// fragments every lane of the warp would load (the device code's address functions with the PTX fragment
// tables), adds Σ_k A·B to the lane's accumulator slots (exact products summed in double, rounded once to
// float), and throws if an operand is not a TF32 value (rounding forgotten where it was produced). The CPU
// simulation of the kernels (tests/core/cuda/sim_kernels_test.cpp) thereby checks the tile layout, the indexing
// and where the rounding happens; the GPU tests check the hardware against the same math.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include "cuda/block.h"

namespace tl::cuda {

// x rounded to TF32: to nearest, ties away from zero, low 13 mantissa bits zero (±inf and NaN unchanged;
// magnitudes that round past the largest TF32 value become ±inf, as cvt.rna does).
TL_HOST_DEVICE TL_FORCE_INLINE float toTf32(float x) {
#if defined(__CUDA_ARCH__)
  unsigned u;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(u) : "f"(x));
  return __uint_as_float(u);
#else
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;
  std::memcpy(&x, &u, sizeof u);
  return x;
#endif
}

// True when x is a TF32 value (or NaN): what the tensor core reads of it is all of it.
inline bool isTf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return (u & 0x1fffu) == 0 || std::isnan(x);
}

// Fragments of mma.m16n8k8 with .tf32 operands (PTX ISA, "Matrix Fragments for mma.m16n8k8"): which element
// of A (16×8, row-major), B (8×8, k × n) and C/D (16×8, float32) register `reg` of `lane` holds.
struct MmaM16N8K8 {
  TL_HOST_DEVICE static constexpr int aRow(int lane, int reg) { return lane / 4 + 8 * (reg % 2); }
  TL_HOST_DEVICE static constexpr int aCol(int lane, int reg) { return lane % 4 + 4 * (reg / 2); }
  TL_HOST_DEVICE static constexpr int bRow(int lane, int reg) { return lane % 4 + 4 * reg; }
  TL_HOST_DEVICE static constexpr int bCol(int lane, int /*reg*/) { return lane / 4; }
  TL_HOST_DEVICE static constexpr int cRow(int lane, int reg) { return lane / 4 + 8 * (reg / 2); }
  TL_HOST_DEVICE static constexpr int cCol(int lane, int reg) { return 2 * (lane % 4) + reg % 2; }
};

#if defined(__CUDA_ARCH__)
// d += a·b, one m16n8k8 TF32 instruction of the warp.
__device__ TL_FORCE_INLINE void mmaTf32(float& d0, float& d1, float& d2, float& d3, const unsigned (&a)[4],
                                        const unsigned (&b)[2]) {
  asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
#endif

// One warp's MI × NI fragments: a (16·MI) × (8·NI) block of A·B, A and B k-major in shared memory.
// Lane `lane` owns acc[TM][TN], TM = 2·MI rows and TN = 2·NI columns of the block: row(lane, r), col(lane, c).
template <int MI_, int NI_>
struct Tf32WarpMma {
  static constexpr int MI = MI_, NI = NI_, TM = 2 * MI, TN = 2 * NI;
  static_assert(MI >= 1 && NI >= 2 && NI % 2 == 0, "column fragments come in pairs (16 columns)");
  using F = MmaM16N8K8;

  // Fragment element (m, k) of row fragment mi sits at a[k·lda + aSlot(mi, m)]: rows g and g + 8 of a fragment
  // are adjacent block rows 16·mi + 2g and 16·mi + 2g + 1.
  TL_HOST_DEVICE static constexpr int aSlot(int mi, int m) { return 16 * mi + 2 * (m % 8) + m / 8; }
  // Element (k, n) of column fragment ni sits at b[k·ldb + bSlot(ni, n)]: column n of fragments 2p and 2p + 1
  // are adjacent block columns 16·p + 2n and 16·p + 2n + 1.
  TL_HOST_DEVICE static constexpr int bSlot(int ni, int n) { return 16 * (ni / 2) + 2 * n + ni % 2; }
  // The accumulator slot of D(m, n) of fragment (mi, ni).
  TL_HOST_DEVICE static constexpr int accRow(int mi, int m) { return 2 * mi + m / 8; }
  TL_HOST_DEVICE static constexpr int accCol(int ni, int n) { return 4 * (ni / 2) + 2 * (n % 2) + ni % 2; }
  // Block row of accumulator row r of `lane` and block column of accumulator column c.
  TL_HOST_DEVICE static constexpr int row(int lane, int r) { return 16 * (r / 2) + 2 * (lane / 4) + r % 2; }
  TL_HOST_DEVICE static constexpr int col(int lane, int c) { return 16 * (c / 4) + 4 * (lane % 4) + c % 4; }

  // What the device code does, as functions the CPU emulation shares (the tests check them against the
  // fragment tables): the offset `lane` loads A register `reg` of row fragment mi from (registers 0, 1 are one
  // 8-byte load, registers 2, 3 another at k + 4) ...
  TL_HOST_DEVICE static constexpr int aOffset(int lane, int mi, int reg, int lda) {
    return (F::aCol(lane, 0) + 4 * (reg / 2)) * lda + aSlot(mi, F::aRow(lane, 0)) + reg % 2;
  }
  // ... B register `reg` of column fragment ni (register 0 of fragments 2p and 2p + 1 is one 8-byte load,
  // register 1 another at k + 4) ...
  TL_HOST_DEVICE static constexpr int bOffset(int lane, int ni, int reg, int ldb) {
    return (F::bRow(lane, 0) + 4 * reg) * ldb + bSlot(2 * (ni / 2), F::bCol(lane, 0)) + ni % 2;
  }
  // ... and the accumulator slot it passes as D register `reg` of fragment (mi, ni) (constants: registers
  // 0, 1 are row g, 2, 3 row g + 8; even registers column 2t, odd ones 2t + 1).
  TL_HOST_DEVICE static constexpr int dRow(int mi, int reg) { return accRow(mi, 8 * (reg / 2)); }
  TL_HOST_DEVICE static constexpr int dCol(int ni, int reg) { return accCol(ni, reg % 2); }

  // acc += A·B over one k-step of 8. `a` points at row k0 of A and the warp block's first row (rows of lda
  // floats), `b` at row k0 of B and the block's first column (rows of ldb floats); 8-byte aligned, operands
  // already TF32.
  TL_HOST_DEVICE static void step(int lane, const float* a, int lda, const float* b, int ldb, float (&acc)[TM][TN]) {
#if defined(__CUDA_ARCH__)
    unsigned af[MI][4], bf[NI][2];
    TL_UNROLL
    for (int mi = 0; mi < MI; ++mi) {
      const float2 lo = *reinterpret_cast<const float2*>(a + aOffset(lane, mi, 0, lda));  // registers 0, 1
      const float2 hi = *reinterpret_cast<const float2*>(a + aOffset(lane, mi, 2, lda));  // registers 2, 3
      af[mi][0] = __float_as_uint(lo.x);
      af[mi][1] = __float_as_uint(lo.y);
      af[mi][2] = __float_as_uint(hi.x);
      af[mi][3] = __float_as_uint(hi.y);
    }
    TL_UNROLL
    for (int pr = 0; pr < NI / 2; ++pr) {
      const float2 lo = *reinterpret_cast<const float2*>(b + bOffset(lane, 2 * pr, 0, ldb));  // register 0 of 2pr, 2pr + 1
      const float2 hi = *reinterpret_cast<const float2*>(b + bOffset(lane, 2 * pr, 1, ldb));  // register 1 of both
      bf[2 * pr][0] = __float_as_uint(lo.x);
      bf[2 * pr][1] = __float_as_uint(hi.x);
      bf[2 * pr + 1][0] = __float_as_uint(lo.y);
      bf[2 * pr + 1][1] = __float_as_uint(hi.y);
    }
    TL_UNROLL
    for (int mi = 0; mi < MI; ++mi) {
      TL_UNROLL
      for (int ni = 0; ni < NI; ++ni)
        mmaTf32(acc[dRow(mi, 0)][dCol(ni, 0)], acc[dRow(mi, 1)][dCol(ni, 1)], acc[dRow(mi, 2)][dCol(ni, 2)],
                acc[dRow(mi, 3)][dCol(ni, 3)], af[mi], bf[ni]);
    }
#else
    const auto operand = [](float x) {
      if (!isTf32(x)) throw std::logic_error("TF32 mma: an operand is not rounded to TF32 where it was produced");
      return x;
    };
    // The registers every lane loads (the device's offsets), placed where the hardware reads them (the tables).
    float A[MI][16][8], B[NI][8][8];
    for (int l = 0; l < 32; ++l) {
      for (int mi = 0; mi < MI; ++mi)
        for (int reg = 0; reg < 4; ++reg) A[mi][F::aRow(l, reg)][F::aCol(l, reg)] = operand(a[aOffset(l, mi, reg, lda)]);
      for (int ni = 0; ni < NI; ++ni)
        for (int reg = 0; reg < 2; ++reg) B[ni][F::bRow(l, reg)][F::bCol(l, reg)] = operand(b[bOffset(l, ni, reg, ldb)]);
    }
    // D register reg of this lane holds D(cRow, cCol) and lands in the slot the device code passes.
    for (int mi = 0; mi < MI; ++mi)
      for (int ni = 0; ni < NI; ++ni)
        for (int reg = 0; reg < 4; ++reg) {
          const int m = F::cRow(lane, reg), n = F::cCol(lane, reg);
          float& d = acc[dRow(mi, reg)][dCol(ni, reg)];
          double sum = d;
          for (int k = 0; k < 8; ++k) sum += double(A[mi][m][k]) * double(B[ni][k][n]);
          d = float(sum);
        }
#endif
  }
};

// The TF32 score tile: a BM×BN tile of dot products q_i·k_j from k-major, zero-padded, TF32-rounded operands
// aT[k][i], by WARPS_M × WARPS_N warps. The interface is ScoreTile's; the operands stream through shared memory
// in chunks of BK along d, two stages deep: while the warps multiply chunk c, the copy engine (cp.async) brings
// chunk c + 1, so each chunk costs one barrier.
template <int BM_, int BN_, int WARPS_M_, int WARPS_N_, int BK_>
struct Tf32ScoreTile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;  // one warp's block
  using Mma = Tf32WarpMma<WM / 16, WN / 8>;
  static constexpr int TM = Mma::TM, TN = Mma::TN;
  static constexpr int kThreadsX = 4 * WARPS_N;  // threads along the columns (keys of a row half-step)
  static constexpr int kThreadsY = 8 * WARPS_M;  // threads along the rows
  static constexpr int kThreads = kThreadsX * kThreadsY;
  static_assert(WM % 16 == 0 && WN % 16 == 0 && BK % 8 == 0, "warp blocks of whole fragments, k-steps of 8");
  static_assert(BM % 32 == 0 && BN % 32 == 0, "padded rows of ≡ 8 (mod 32) floats");
  static constexpr int kLdA = BM + 8, kLdB = BN + 8;
  static constexpr int kStages = 2;

  struct Stage {
    alignas(16) float a[BK][kLdA];
    alignas(16) float b[BK][kLdB];
  };
  struct Operands {
    Stage stage[kStages];
  };

  TL_HOST_DEVICE static constexpr int warpRow(int tid) { return tid / 32 / WARPS_N; }
  TL_HOST_DEVICE static constexpr int warpCol(int tid) { return tid / 32 % WARPS_N; }
  TL_HOST_DEVICE static constexpr int tx(int tid) { return warpCol(tid) * 4 + tid % 4; }
  TL_HOST_DEVICE static constexpr int ty(int tid) { return warpRow(tid) * 8 + tid % 32 / 4; }
  TL_HOST_DEVICE static constexpr int row(int tid, int r) { return warpRow(tid) * WM + Mma::row(tid % 32, r); }
  TL_HOST_DEVICE static constexpr int col(int tid, int c) { return warpCol(tid) * WN + Mma::col(tid % 32, c); }

  TL_HOST_DEVICE static void zero(float (&acc)[TM][TN]) {
    TL_UNROLL
    for (int r = 0; r < TM; ++r) {
      TL_UNROLL
      for (int c = 0; c < TN; ++c) acc[r][c] = 0.f;
    }
  }

  // Starts copying chunk k0 into `st` (asynchronously on the device; product() waits). Same requirements as
  // ScoreTile::loadAligned: row0 and ldA multiples of 4, row0 + BM ≤ ldA, col0 + BN ≤ ldB, k0 + BK ≤ dPad.
  TL_HOST_DEVICE static void loadAligned(int tid, Stage& st, const float* aT, long long ldA, long long row0,
                                         const float* bT, long long ldB, long long col0, int k0) {
    constexpr int kVecA = BK * BM / 4, kVecB = BK * BN / 4;
    for (int v = tid; v < kVecA; v += kThreads) {
      const int k = v / (BM / 4), r = (v % (BM / 4)) * 4;
      copyAsync16<true>(&st.a[k][r], aT + (k0 + k) * ldA + row0 + r);  // the same rows for every key tile
    }
    for (int v = tid; v < kVecB; v += kThreads) {
      const int k = v / (BN / 4), c = (v % (BN / 4)) * 4;
      copyAsync16<false>(&st.b[k][c], bT + (k0 + k) * ldB + col0 + c);
    }
  }

  // Any row0/col0: element loads; rows (columns) at or beyond limitA (limitB) read as 0.
  TL_HOST_DEVICE static void loadGuarded(int tid, Stage& st, const float* aT, long long ldA, long long row0,
                                         long long limitA, const float* bT, long long ldB, long long col0,
                                         long long limitB, int k0) {
    for (int v = tid; v < BK * BM; v += kThreads) {
      const int k = v / BM, r = v % BM;
      st.a[k][r] = row0 + r < limitA ? aT[(k0 + k) * ldA + row0 + r] : 0.f;
    }
    for (int v = tid; v < BK * BN; v += kThreads) {
      const int k = v / BN, c = v % BN;
      st.b[k][c] = col0 + c < limitB ? bT[(k0 + k) * ldB + col0 + c] : 0.f;
    }
  }

  // The whole head dimension for one tile (ScoreTile::product's contract; `load(tid, k0, stage)` starts
  // chunk k0 into `stage`, e.g. with loadAligned). The first phase zeroes the accumulators and loads chunk 0;
  // then each phase starts chunk c + 1 into the other stage, multiplies chunk c and waits for its own copies,
  // and ends at a barrier: a stage is overwritten only after the barrier that follows its last reads.
  template <class Block, class Acc, class Load>
  TL_HOST_DEVICE static void product(Block& block, Operands& sm, int dPad, Acc&& acc, Load&& load) {
    const int chunks = dPad / BK;
    block.forEach([&](int tid) {
      zero(acc(tid));
      load(tid, 0, sm.stage[0]);
      waitAsyncCopies();
    });
    block.sync();
    for (int c = 0; c < chunks; ++c) {
      block.forEach([&](int tid) {
        if (c + 1 < chunks) load(tid, (c + 1) * BK, sm.stage[(c + 1) % kStages]);
        accumulate(tid, sm.stage[c % kStages], acc(tid));
        waitAsyncCopies();
      });
      block.sync();
    }
  }

  // acc += the chunk's products, BK / 8 tensor-core k-steps.
  TL_HOST_DEVICE static void accumulate(int tid, const Stage& st, float (&acc)[TM][TN]) {
    TL_UNROLL
    for (int ks = 0; ks < BK / 8; ++ks)
      Mma::step(tid % 32, &st.a[8 * ks][warpRow(tid) * WM], kLdA, &st.b[8 * ks][warpCol(tid) * WN], kLdB, acc);
  }
};

// O += P·V on one key tile with the tensor cores (ValueProduct's interface): the BM×BN plan tile, rounded to
// TF32 and stored k-major (p[j][i], so that the P fragments load like the score tile's A), and a BN×DVC tile
// of V (TF32 since its conversion). Each warp computes its score rows × DVC / WARPS_N output columns, so a
// thread's output rows are its score rows and its TV output columns are 4·tx … 4·tx + 3.
template <class Tile, int DVC>
struct Tf32ValueProduct {
  using TileType = Tile;
  static constexpr int BM = Tile::BM, BN = Tile::BN, TM = Tile::TM, TN = Tile::TN, TV = DVC / Tile::kThreadsX;
  static constexpr int WV = DVC / Tile::WARPS_N;  // output columns of one warp
  using Mma = Tf32WarpMma<Tile::WM / 16, WV / 8>;
  static_assert(Mma::TM == TM && Mma::TN == TV && TV == 4, "one 16-byte vector of output columns per thread");
  static_assert(BN % 8 == 0 && DVC % 32 == 0, "whole k-steps; padded rows of ≡ 8 (mod 32) floats");
  static constexpr int kLdP = BM + 8, kLdV = DVC + 8;
  struct Smem {
    alignas(16) float p[BN][kLdP];  // p[j][i]: plan entry (row i, key j), TF32
    alignas(16) float v[BN][kLdV];
  };
  TL_HOST_DEVICE static constexpr int outCol(int tid, int c) { return Tile::warpCol(tid) * WV + Mma::col(tid % 32, c); }

  TL_HOST_DEVICE static void zero(float (&o)[TM][TV]) {
    TL_UNROLL
    for (int r = 0; r < TM; ++r) {
      TL_UNROLL
      for (int c = 0; c < TV; ++c) o[r][c] = 0.f;
    }
  }
  // The thread's plan entries (its score tile slots), rounded to TF32; rows 2m and 2m + 1 are adjacent.
  TL_HOST_DEVICE static void storePlan(int tid, Smem& sm, const float (&entries)[TM][TN]) {
    TL_UNROLL
    for (int r = 0; r < TM; r += 2) {
      TL_UNROLL
      for (int c = 0; c < TN; ++c)
        store2(&sm.p[Tile::col(tid, c)][Tile::row(tid, r)], toTf32(entries[r][c]), toTf32(entries[r + 1][c]));
    }
  }
  // Starts copying rows [col0, col0 + BN), columns [c0, c0 + DVC) of one head's v ([ld][dvPad], zero-padded,
  // TF32); waitLoads() completes them.
  TL_HOST_DEVICE static void loadValues(int tid, Smem& sm, const float* v, long long col0, int dvPad, int c0) {
    for (int idx = tid; idx < BN * DVC / 4; idx += Tile::kThreads) {
      const int j = idx / (DVC / 4), c = (idx % (DVC / 4)) * 4;
      copyAsync16<false>(&sm.v[j][c], v + (col0 + j) * dvPad + c0 + c);
    }
  }
  TL_HOST_DEVICE static void waitLoads() { waitAsyncCopies(); }
  // o += P·V over the tile's BN keys, BN / 8 tensor-core k-steps.
  TL_HOST_DEVICE static void accumulate(int tid, const Smem& sm, float (&o)[TM][TV]) {
    TL_UNROLL
    for (int ks = 0; ks < BN / 8; ++ks)
      Mma::step(tid % 32, &sm.p[8 * ks][Tile::warpRow(tid) * Tile::WM], kLdP, &sm.v[8 * ks][Tile::warpCol(tid) * WV],
                kLdV, o);
  }
};

}  // namespace tl::cuda
