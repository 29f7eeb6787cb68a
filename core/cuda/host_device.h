#pragma once
// Code shared by CUDA kernels and their CPU unit tests. Under nvcc, TL_HOST_DEVICE marks a function for both
// the host and the device; under g++ it is empty, so the same arithmetic is compiled and tested on the CPU
// (tests/core/cuda) against the CPU reference in core/ops.
//
// Nothing here includes CUDA headers: these files build with g++ alone.
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__CUDACC__)
#define TL_HOST_DEVICE __host__ __device__
#define TL_FORCE_INLINE __forceinline__
#else
#define TL_HOST_DEVICE
#define TL_FORCE_INLINE inline
#endif
// Full unrolling where register arrays are indexed (device pass only; the host compiler does not know it).
#if defined(__CUDA_ARCH__)
#define TL_UNROLL _Pragma("unroll")
#else
#define TL_UNROLL
#endif

namespace tl::cuda {

// −inf, the log of a zero marginal or a masked score. (std::numeric_limits is constexpr, so it is usable in
// device code.)
TL_HOST_DEVICE constexpr float negInf() { return -std::numeric_limits<float>::infinity(); }

TL_HOST_DEVICE inline bool isNegInf(float x) { return x == negInf(); }

// Accurate single-precision exp and log on both sides (device: CUDA's expf/logf, max 2 ulp; host: libm).
// Never the fast __expf: the kernels must match the CPU float32 reference within its own rounding error.
TL_HOST_DEVICE TL_FORCE_INLINE float expF(float x) {
#if defined(__CUDA_ARCH__)
  return ::expf(x);
#else
  return std::exp(x);
#endif
}
TL_HOST_DEVICE TL_FORCE_INLINE float logF(float x) {
#if defined(__CUDA_ARCH__)
  return ::logf(x);
#else
  return std::log(x);
#endif
}

TL_HOST_DEVICE TL_FORCE_INLINE float maxF(float a, float b) { return a > b ? a : b; }

// Which block of a grid a thread block is (blockIdx as plain ints, so block bodies run on the CPU too).
struct BlockIndex {
  int x = 0, y = 0, z = 0;
};

}  // namespace tl::cuda
