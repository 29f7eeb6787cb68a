#pragma once
// The kernels of soft ESP on the GPU (esp_soft_cuda.h; the host side is esp_soft_run.h), written as block.h
// bodies so the CPU tests run them thread by thread:
//   SoftSortSumsKernel   the normalisers of the SoftSort rows of one side of a slice, on their bands
//                        (esp_soft_bands.h); the entries themselves are formed where a tile needs them, so a
//                        slice holds O(n) numbers, not its n × n SoftSort matrices;
//   SoftSliceKernelT     16 × 16 tiles of U_l = Σ_e mass_e·R^Q[r_e, :]ᵀ R^K[s_e, :] in sorted coordinates, either
//                        dotted with the same tile of C (<Cost>: one partial sum of D_l per block) or added,
//                        times the slice's coefficient, into the plan at the tokens' own positions (<Plan>);
//   PlanValuesKernel     O = A·V from the dense plan;
//   FillZeroKernel       the plan's zeros before the slices are added.
#include "cuda/block.h"
#include "cuda/esp_soft_bands.h"
#include "cuda/tile_index.h"

namespace tl::cuda {

// A SoftSort logit, −(x_j − x_(r))²/t, rounded as ops/esp/soft_sort.cpp rounds it.
TL_HOST_DEVICE TL_FORCE_INLINE float softSortLogit(float anchor, float value, float temp) {
  const float gap = value - anchor;
  return -(gap * gap) / temp;
}

// C_ij = ‖q_i − k_j‖^p from the squared distance, as ops/esp/esp_slice.cpp groundCost computes it.
TL_HOST_DEVICE TL_FORCE_INLINE float groundCostF(float squaredDistance, float p) {
  if (p == 2.f) return squaredDistance;
#if defined(__CUDA_ARCH__)
  if (p == 1.f) return ::sqrtf(squaredDistance);
  return ::powf(squaredDistance, p / 2.f);
#else
  if (p == 1.f) return std::sqrt(squaredDistance);
  return std::pow(squaredDistance, p / 2.f);
#endif
}

// One side's SoftSort matrix on the device: its sorted values, bands (SoftSortBands) and row sums.
struct BandRows {
  const float* sorted;
  const int* lo;
  const int* len;
  const float* rowSum;
  float temp;
};

// The unnormalised SoftSort entry exp(logit): the anchor's logit is exactly 0, so no max is subtracted.
TL_HOST_DEVICE TL_FORCE_INLINE float softSortTerm(const BandRows& rows, long long r, long long c) {
  return expF(softSortLogit(rows.sorted[r], rows.sorted[c], rows.temp));
}

// R[r, c] (sorted positions), rounded as ops/esp/soft_sort.cpp rounds it; 0 outside row r's band.
TL_HOST_DEVICE TL_FORCE_INLINE float bandEntry(const BandRows& rows, int r, long long c) {
  const long long k = c - rows.lo[r];
  return k >= 0 && k < rows.len[r] ? softSortTerm(rows, r, c) / rows.rowSum[r] : 0.f;
}

// A tile product's operands: 16 values of the left and right factor for each of 16 inner indices.
struct ProductTile {
  float left[kEspTile][kEspTile];   // [inner][row]
  float right[kEspTile][kEspTile];  // [inner][column]
};

// acc[tid] += Σ_{i ∈ [first, end)} left(i, row)·right(i, column) with row = tid / 16, column = tid % 16,
// the operands staged 16 inner indices at a time; left(i, row) and right(i, column) return 0 outside the
// operands. In a fixed order, so every run gives the same bits.
template <class Block, class Left, class Right, class Acc>
TL_HOST_DEVICE void tileProduct(Block& block, ProductTile& sh, long long first, long long end, Left left, Right right,
                                Acc acc) {
  for (long long i0 = first; i0 < end; i0 += kEspTile) {
    block.forEach([&](int tid) {
      const int i = tid / kEspTile, x = tid % kEspTile;
      const bool inside = i0 + i < end;
      sh.left[i][x] = inside ? left(i0 + i, x) : 0.f;
      sh.right[i][x] = inside ? right(i0 + i, x) : 0.f;
    });
    block.sync();
    block.forEach([&](int tid) {
      float& a = acc(tid);
      for (int i = 0; i < kEspTile; ++i) a = fmaF(sh.left[i][tid / kEspTile], sh.right[i][tid % kEspTile], a);
    });
    block.sync();
  }
}

struct FillZeroKernel {
  static constexpr int kThreads = 256;
  struct Params {
    float* data;
    long long count;
  };
  struct Shared {};
  static Grid grid(const Params& p) { return {ceilDiv(p.count, kThreads)}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const long long i = (long long)bi.x * kThreads + tid;
      if (i < p.count) p.data[i] = 0.f;
    });
  }
};

// The normaliser of row r of a SoftSort matrix (docs/operators/esp.md#soft-sorting) on its band, summed in
// column order. One thread per row.
struct SoftSortSumsKernel {
  static constexpr int kThreads = 128;
  struct Params {
    BandRows rows;  // rowSum is what this kernel writes
    int n;
    float* rowSum;  // [n]
  };
  struct Shared {};
  static Grid grid(const Params& p) { return {ceilDiv(p.n, kThreads)}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const long long r = (long long)bi.x * kThreads + tid;
      if (r >= p.n) return;
      float sum = 0.f;
      for (long long c = p.rows.lo[r]; c < p.rows.lo[r] + p.rows.len[r]; ++c) sum += softSortTerm(p.rows, r, c);
      p.rowSum[r] = sum;
    });
  }
};

enum class SliceTile { Cost, Plan };

// Block (x, y) computes the tile of U_l at query positions A = x and key positions B = keyFirst[A] + y
// (esp_soft_bands.h TileSchedule) from the entries of Λ both tiles can reach; blocks beyond keyCount[A] have
// no tile (Cost: their partial sum is 0).
template <SliceTile Mode>
struct SoftSliceKernelT {
  static constexpr int kThreads = kEspTile * kEspTile;
  struct Params {
    BandRows queries, keys;                 // R^Q, R^K of the slice
    const int* rank;                        // Λ's entries: query rank, key rank, mass
    const int* keyRank;
    const float* mass;
    const int *queryFirst, *queryEnd;       // TileEntries of the query tiles
    const int *keyFirst, *keyEnd;           // TileEntries of the key tiles
    const int *scheduleFirst, *scheduleCount;  // TileSchedule
    int maxCount;
    int validQ, validK;
    const int* tokenQ;                      // the token of each sorted position
    const int* tokenK;
    // Cost: C from q and k; partial [aTiles][maxCount].
    const float* q;                         // [nq][d]
    const float* k;                         // [nk][d]
    int d;
    float p;
    float* partial;
    // Plan: plan[token_i][token_j] += coefficient·U_l(i, j).
    float coefficient;
    float* plan;                            // [nq][nk]
    int nk;
  };
  struct Shared {
    ProductTile product;
    float sums[kThreads];
  };
  struct Regs {
    float u;
  };
  static Grid grid(const Params& p) { return {ceilDiv(p.validQ, kEspTile), p.maxCount}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const int A = bi.x, j = bi.y;
    if (j >= p.scheduleCount[A]) {  // the whole block: no tile here
      if constexpr (Mode == SliceTile::Cost)
        block.forEach([&](int tid) {
          if (tid == 0) p.partial[(long long)A * p.maxCount + j] = 0.f;
        });
      return;
    }
    const int B = p.scheduleFirst[A] + j;
    const long long a0 = (long long)A * kEspTile, b0 = (long long)B * kEspTile;
    const int first = p.queryFirst[A] > p.keyFirst[B] ? p.queryFirst[A] : p.keyFirst[B];
    const int end = p.queryEnd[A] < p.keyEnd[B] ? p.queryEnd[A] : p.keyEnd[B];
    typename Block::template Local<Regs> regs(block);
    block.forEach([&](int tid) { regs[tid].u = 0.f; });
    // The mass multiplies the key side, as the CPU forms Λ·R^K before the product (ops/esp/esp.cpp).
    tileProduct(
        block, sh.product, first, end,
        [&](long long e, int x) { return a0 + x < p.validQ ? bandEntry(p.queries, p.rank[e], a0 + x) : 0.f; },
        [&](long long e, int x) {
          return b0 + x < p.validK ? p.mass[e] * bandEntry(p.keys, p.keyRank[e], b0 + x) : 0.f;
        },
        [&](int tid) -> float& { return regs[tid].u; });
    const auto entry = [&](int tid, auto use) {
      const long long a = a0 + tid / kEspTile, b = b0 + tid % kEspTile;
      if (a < p.validQ && b < p.validK) use(p.tokenQ[a], p.tokenK[b], regs[tid].u);
    };
    if constexpr (Mode == SliceTile::Plan) {
      block.forEach([&](int tid) {
        entry(tid, [&](long long i, long long jk, float u) { p.plan[i * p.nk + jk] += p.coefficient * u; });
      });
    } else {
      block.forEach([&](int tid) {
        sh.sums[tid] = 0.f;
        entry(tid, [&](long long i, long long jk, float u) {
          const float* qi = p.q + i * p.d;
          const float* kj = p.k + jk * p.d;
          float squared = 0.f;
          for (int c = 0; c < p.d; ++c) squared = fmaF(qi[c] - kj[c], qi[c] - kj[c], squared);
          sh.sums[tid] = groundCostF(squared, p.p) * u;
        });
      });
      block.sync();
      block.forEach([&](int tid) {
        if (tid != 0) return;
        float sum = 0.f;
        for (int t = 0; t < kThreads; ++t) sum += sh.sums[t];
        p.partial[(long long)A * p.maxCount + j] = sum;
      });
    }
  }
};
using SoftSliceCostKernel = SoftSliceKernelT<SliceTile::Cost>;
using SoftSlicePlanKernel = SoftSliceKernelT<SliceTile::Plan>;

// O = A·V for a dense row-major plan: block (x, y) computes rows 16x.. and value columns 16y.. of O.
struct PlanValuesKernel {
  static constexpr int kThreads = kEspTile * kEspTile;
  struct Params {
    const float* plan;  // [nq][nk]
    const float* v;     // [nk][dv]
    int nq, nk, dv;
    float* out;         // [nq][dv]
  };
  struct Shared {
    ProductTile product;
  };
  struct Regs {
    float o;
  };
  static Grid grid(const Params& p) { return {ceilDiv(p.nq, kEspTile), ceilDiv(p.dv, kEspTile)}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long i0 = (long long)bi.x * kEspTile, c0 = (long long)bi.y * kEspTile;
    typename Block::template Local<Regs> regs(block);
    block.forEach([&](int tid) { regs[tid].o = 0.f; });
    tileProduct(
        block, sh.product, 0, p.nk,
        [&](long long j, int x) { return i0 + x < p.nq ? p.plan[(i0 + x) * p.nk + j] : 0.f; },
        [&](long long j, int x) { return c0 + x < p.dv ? p.v[j * p.dv + c0 + x] : 0.f; },
        [&](int tid) -> float& { return regs[tid].o; });
    block.forEach([&](int tid) {
      const long long i = i0 + tid / kEspTile, c = c0 + tid % kEspTile;
      if (i < p.nq && c < p.dv) p.out[i * p.dv + c] = regs[tid].o;
    });
  }
};

}  // namespace tl::cuda
