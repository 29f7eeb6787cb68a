#pragma once
// Kernels that bring a problem's inputs into the kernels' float32 layouts (shared by every family):
//   ConvertTransposeKernel: q or k, [batch][n][d] of any ElementType → k-major [batch][dPad][ld] float32,
//                           zero-padded (so padded rows and dimensions add exactly 0 to every dot product);
//   ConvertRowsKernel:      v, [batch][n][cols] → row-major [batch][ldRows][ldCols] float32, zero-padded;
//   both round their output to TF32 when asked (CudaOptions::tf32: the operands of the tensor-core tiles,
//   tf32_tile.h), after checking the input values themselves for NaN/Inf;
//   InitPotentialKernel:    a potential [batch][ld]: 0 on active tokens, −inf on inactive and padded ones.
// Kernel conventions: block.h.
#include "cuda/block.h"
#include "cuda/element_convert.h"
#include "cuda/tf32_tile.h"
#include "cuda/tile_index.h"

namespace tl::cuda {

struct ConvertTransposeKernel {
  static constexpr int kTile = 32, kThreads = 256, kPasses = kTile * kTile / kThreads;
  struct Params {
    const void* in;  // [batch][n][d]
    ElementType type;
    int n, d, dPad;
    long long ld;    // padded length of `out` rows
    float* out;      // [batch][dPad][ld]
    int* nonFinite;  // set to 1 when an input value is NaN or ±inf
    bool tf32;       // round the output to TF32
  };
  struct Shared {
    float tile[kTile][kTile + 1];  // +1: transposed reads hit distinct banks
  };
  static Grid grid(const Params& p, int batch) { return {ceilDiv(p.ld, kTile), ceilDiv(p.dPad, kTile), batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared& sh) {
    const long long i0 = (long long)bi.x * kTile, b = bi.z;
    const int k0 = bi.y * kTile;
    block.forEach([&](int tid) {  // coalesced along d
      const int tx = tid % kTile, ty = tid / kTile;
      for (int pass = 0; pass < kPasses; ++pass) {
        const long long i = i0 + ty + pass * (kThreads / kTile);
        const int k = k0 + tx;
        const float x = i < p.n && k < p.d ? readElement(p.in, p.type, (b * p.n + i) * p.d + k) : 0.f;
        if (!isFiniteF(x)) *p.nonFinite = 1;
        sh.tile[ty + pass * (kThreads / kTile)][tx] = p.tf32 ? toTf32(x) : x;
      }
    });
    block.sync();
    block.forEach([&](int tid) {  // coalesced along n
      const int tx = tid % kTile, ty = tid / kTile;
      for (int pass = 0; pass < kPasses; ++pass) {
        const int k = k0 + ty + pass * (kThreads / kTile);
        const long long i = i0 + tx;
        if (k < p.dPad && i < p.ld) p.out[(b * p.dPad + k) * p.ld + i] = sh.tile[tx][ty + pass * (kThreads / kTile)];
      }
    });
  }
};

struct ConvertRowsKernel {
  static constexpr int kThreads = 256;
  struct Params {
    const void* in;  // [batch][n][cols]
    ElementType type;
    int n, cols;
    long long ldRows, ldCols;
    float* out;      // [batch][ldRows][ldCols]
    int* nonFinite;  // set to 1 when an input value is NaN or ±inf
    bool tf32;       // round the output to TF32
  };
  struct Shared {};
  static Grid grid(const Params& p, int batch) { return {ceilDiv(p.ldRows * p.ldCols, kThreads), 1, batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    const long long b = bi.z;
    block.forEach([&](int tid) {
      const long long idx = (long long)bi.x * kThreads + tid;
      if (idx >= p.ldRows * p.ldCols) return;
      const long long j = idx / p.ldCols, c = idx % p.ldCols;
      const float x = j < p.n && c < p.cols ? readElement(p.in, p.type, (b * p.n + j) * p.cols + c) : 0.f;
      if (!isFiniteF(x)) *p.nonFinite = 1;
      p.out[b * p.ldRows * p.ldCols + idx] = p.tf32 ? toTf32(x) : x;
    });
  }
};

struct InitPotentialKernel {
  static constexpr int kThreads = 256;
  struct Params {
    const float* logMarginal;  // [n], shared by the batch
    int n;
    long long ld;
    float* potential;  // [batch][ld]
  };
  struct Shared {};
  static Grid grid(const Params& p, int batch) { return {ceilDiv(p.ld, kThreads), 1, batch}; }

  template <class Block>
  TL_HOST_DEVICE static void run(Block& block, const Params& p, BlockIndex bi, Shared&) {
    block.forEach([&](int tid) {
      const long long i = (long long)bi.x * kThreads + tid;
      if (i >= p.ld) return;
      p.potential[(long long)bi.z * p.ld + i] = i < p.n && !isNegInf(p.logMarginal[i]) ? 0.f : negInf();
    });
  }
};

}  // namespace tl::cuda
