#pragma once
// ESP's arithmetic shared by the GPU kernels (esp_kernels.h) and the CPU reference (core/ops/esp): under nvcc
// for both sides, under g++ for the host alone (host_device.h).
#include <cmath>

#include "cuda/host_device.h"

namespace tl::cuda {

// s = x·θ as one FMA per feature in increasing order. Identical tokens get identical projections wherever
// they sit (a blocked matrix product may round equal rows differently, which would split a tie group), and
// the device's projections are the CPU's bit for bit, so both sort alike.
template <class T>
TL_HOST_DEVICE TL_FORCE_INLINE T espProjection(const T* x, const T* theta, int d) {
  T s = T(0);
  for (int c = 0; c < d; ++c) {
#if defined(__CUDA_ARCH__)
    s = __fmaf_rn(x[c], theta[c], s);  // the device runs float32 only
#else
    s = std::fma(x[c], theta[c], s);
#endif
  }
  return s;
}

// C_ij = ‖q_i − k_j‖^p from ‖q_i − k_j‖² (the CPU's groundCost, ops/esp/esp_slice.h, is this): p = 2
// needs no root. Halving p is exact, so p/2 is the same number in either precision.
template <class T>
TL_HOST_DEVICE TL_FORCE_INLINE T espGroundCost(T squaredDistance, T p) {
  if (p == T(2)) return squaredDistance;
#if defined(__CUDA_ARCH__)
  if (p == 1.f) return ::sqrtf(squaredDistance);  // the device runs float32 only
  return ::powf(squaredDistance, 0.5f * p);
#else
  if (p == T(1)) return std::sqrt(squaredDistance);
  return std::pow(squaredDistance, T(0.5) * p);
#endif
}

}  // namespace tl::cuda
