#pragma once
// Input element types of the CUDA backend and their exact widening to float32 (the kernels compute in
// float32). Bit manipulations only, so the same functions run in kernels and in CPU tests.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cuda/host_device.h"

namespace tl::cuda {

// F16: IEEE 754 binary16; BF16: bfloat16 (the upper half of a float32). Both as raw uint16_t bits.
enum class ElementType { F32, F16, BF16 };

inline size_t elementSize(ElementType type) { return type == ElementType::F32 ? 4 : 2; }
inline const char* elementName(ElementType type) {
  return type == ElementType::F32 ? "f32" : type == ElementType::F16 ? "f16" : "bf16";
}

TL_HOST_DEVICE TL_FORCE_INLINE float floatFromBits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

TL_HOST_DEVICE TL_FORCE_INLINE uint32_t bitsFromFloat(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

// Not NaN and not ±inf (a bit test: unaffected by any floating-point optimisation).
TL_HOST_DEVICE TL_FORCE_INLINE bool isFiniteF(float x) { return (bitsFromFloat(x) & 0x7f800000u) != 0x7f800000u; }

// Exact binary16 → float32, including subnormals, ±inf and NaN.
TL_HOST_DEVICE inline float halfBitsToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return floatFromBits(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent != 0) return floatFromBits(sign | ((exponent + 112u) << 23) | (mantissa << 13));  // 127 − 15
  // Zero or subnormal: mantissa · 2^−24 is exact in float32.
  const float magnitude = float(mantissa) * (1.0f / 16777216.0f);
  return sign ? -magnitude : magnitude;
}

// Exact bfloat16 → float32.
TL_HOST_DEVICE TL_FORCE_INLINE float bf16BitsToFloat(uint16_t b) { return floatFromBits(uint32_t(b) << 16); }

// Element `index` of a host or device array of `type`, widened to float.
TL_HOST_DEVICE TL_FORCE_INLINE float readElement(const void* base, ElementType type, size_t index) {
  switch (type) {
    case ElementType::F16:
      return halfBitsToFloat(static_cast<const uint16_t*>(base)[index]);
    case ElementType::BF16:
      return bf16BitsToFloat(static_cast<const uint16_t*>(base)[index]);
    default:
      return static_cast<const float*>(base)[index];
  }
}

}  // namespace tl::cuda
