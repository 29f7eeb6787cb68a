#include "io/checkpoint/half_float.h"

#include <cstring>

namespace tl {
namespace {

uint32_t bitsOf(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float floatOf(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

}  // namespace

float halfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return floatOf(sign | 0x7f800000u | (mantissa << 13));            // inf, NaN (payload kept)
  if (exponent != 0) return floatOf(sign | ((exponent + 112) << 23) | (mantissa << 13));  // 127 - 15 = 112
  if (mantissa == 0) return floatOf(sign);
  // Subnormal half: shift the mantissa up until its leading 1 becomes the implicit bit of a normal float.
  int e = -1;
  do {
    ++e;
    mantissa <<= 1;
  } while ((mantissa & 0x400u) == 0);
  return floatOf(sign | uint32_t(112 - e) << 23 | ((mantissa & 0x3ffu) << 13));
}

uint16_t floatToHalf(float value) {
  const uint32_t f = bitsOf(value);
  const uint16_t sign = uint16_t((f >> 16) & 0x8000u);
  const uint32_t absBits = f & 0x7fffffffu;
  if (absBits > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((absBits >> 13) & 0x3ffu));  // NaN, quiet
  if (absBits >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // ≥ 65520 rounds to inf (and inf stays inf)
  if (absBits < 0x38800000u) {
    // Result is subnormal (or zero): |x| < 2^-14. Scale the full 24-bit significand to units of 2^-24 and
    // round to nearest even. Values below 2^-25 round to zero (ties to even).
    if (absBits < 0x33000000u) return sign;
    const uint32_t exponent = absBits >> 23;
    const uint32_t significand = (absBits & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;  // 102 ≤ exponent ≤ 112 ⇒ shift in [14, 24]
    const uint32_t halfway = 1u << (shift - 1);
    const uint32_t rest = significand & ((1u << shift) - 1);
    uint32_t result = significand >> shift;
    if (rest > halfway || (rest == halfway && (result & 1u))) ++result;
    return uint16_t(sign | result);  // a carry into bit 10 correctly yields the smallest normal
  }
  // Normal: rebias the exponent (127 → 15) and round the 23-bit mantissa to 10 bits, ties to even; a carry
  // out of the mantissa increments the exponent, which is exactly the rounded value.
  const uint32_t rebased = absBits - (112u << 23);
  const uint32_t rest = rebased & 0x1fffu;
  uint32_t result = rebased >> 13;
  if (rest > 0x1000u || (rest == 0x1000u && (result & 1u))) ++result;
  return uint16_t(sign | result);
}

float bfloat16ToFloat(uint16_t bits) { return floatOf(uint32_t(bits) << 16); }

uint16_t floatToBfloat16(float value) {
  const uint32_t f = bitsOf(value);
  if ((f & 0x7fffffffu) > 0x7f800000u) return uint16_t((f >> 16) | 0x0040u);  // NaN stays NaN, quiet
  // Round to nearest even on the dropped 16 bits; overflow carries into the exponent and gives inf.
  const uint32_t rounding = 0x7fffu + ((f >> 16) & 1u);
  return uint16_t((f + rounding) >> 16);
}

}  // namespace tl
