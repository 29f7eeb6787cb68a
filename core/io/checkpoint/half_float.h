#pragma once
// IEEE 754 binary16 ("half", F16) and bfloat16 (BF16) as stored in checkpoints, converted to and from
// float32 bit-exactly: widening is exact; narrowing rounds to nearest, ties to even, overflows to ±inf and
// keeps NaN a (quiet) NaN with its sign.
#include <cstdint>

namespace tl {

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);

float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

}  // namespace tl
