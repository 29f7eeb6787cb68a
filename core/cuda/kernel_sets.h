#pragma once
// The kernels of a dense run in one precision of the score tiles (CudaOptions::tf32). Both sets share every
// kernel body (dense_kernels.h, softmax_kernels.h) and differ only in the tile products:
//   Fp32Kernels: float32 FMAs, one per k in increasing k (the default; matches the CPU float32 reference
//                within its own rounding error);
//   Tf32Kernels: TF32 tensor cores (tf32_tile.h) for QKᵀ in every kernel and for P·V in the output kernels,
//                operands rounded to TF32 by the conversion kernels (q, k, v) and at the P·V store (P).
#include "cuda/dense_kernels.h"
#include "cuda/softmax_kernels.h"

namespace tl::cuda {

struct Fp32Kernels {
  static constexpr bool kTf32 = false;
  using Lse = LsePartialKernel;
  using Apply = ApplyKernel;
  using Plan = PlanKernel;
  using Display = DisplayKernel;
  using FlashSoftmax = FlashSoftmaxKernel;
  static constexpr const char* kLse = "LsePartialKernel";
  static constexpr const char* kApply = "ApplyKernel";
  static constexpr const char* kPlan = "PlanKernel";
  static constexpr const char* kDisplay = "DisplayKernel";
  static constexpr const char* kFlashSoftmax = "FlashSoftmaxKernel";
};

struct Tf32Kernels {
  static constexpr bool kTf32 = true;
  // 128 × 128 tile of 2 × 4 warps (each 64 × 32: 4 × 4 fragments, the FP32 tile's 8 × 8 slots per thread).
  using Lse = LsePartialKernelT<Tf32ScoreTile<128, 128, 2, 4, kHeadDimPad>>;
  using Values = Tf32ValueProduct<Tf32Tile64, kValueDimPad>;
  using Apply = ApplyKernelT<Tf32Tile64, Values>;
  using Plan = PlanKernelT<Tf32Tile64>;
  using Display = DisplayKernelT<Tf32Tile64>;
  using FlashSoftmax = FlashSoftmaxKernelT<Tf32Tile64, Values>;
  static constexpr const char* kLse = "LsePartialKernel (TF32)";
  static constexpr const char* kApply = "ApplyKernel (TF32)";
  static constexpr const char* kPlan = "PlanKernel (TF32)";
  static constexpr const char* kDisplay = "DisplayKernel (TF32)";
  static constexpr const char* kFlashSoftmax = "FlashSoftmaxKernel (TF32)";
};

}  // namespace tl::cuda
