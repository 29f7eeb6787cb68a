// float16 and bfloat16 conversions: known bit patterns, and every rounding boundary checked exhaustively.
#include "io/checkpoint/half_float.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "support/test_util.h"

namespace tl {
namespace {

using test::kFloatInf;

uint32_t bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

float fromBits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}


TEST(HalfFloat, KnownPatternsWiden) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));     // smallest subnormal
  EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(halfToFloat(0x0400), std::ldexp(1.0f, -14));     // smallest normal
  EXPECT_EQ(halfToFloat(0x7c00), kFloatInf);
  EXPECT_EQ(halfToFloat(0xfc00), -kFloatInf);
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_EQ(bits(halfToFloat(0x8000)), 0x80000000u);  // -0 keeps its sign
}

TEST(HalfFloat, EveryHalfWidensExactlyAndNarrowsBack) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = halfToFloat(uint16_t(h));
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (nan) {
      ASSERT_TRUE(std::isnan(f)) << h;
      ASSERT_EQ(floatToHalf(f) & 0x7e00, 0x7e00) << "NaN stays a quiet NaN: " << h;
      ASSERT_EQ(floatToHalf(f) & 0x8000, h & 0x8000) << h;
      continue;
    }
    // Independent value: (-1)^s · 2^(e-15) · (1 + m/1024), or 2^-14 · m/1024 for subnormals.
    const int e = int(h >> 10 & 0x1f), m = int(h & 0x3ff);
    const double magnitude = e == 0x1f ? double(kFloatInf) : e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    ASSERT_EQ(double(f), (h & 0x8000) ? -magnitude : magnitude) << h;
    ASSERT_EQ(floatToHalf(f), h) << h;
  }
}

TEST(HalfFloat, NarrowingRoundsToNearestEvenAtEveryMidpoint) {
  // Between each pair of neighbouring positive halves (subnormal and normal), the midpoint goes to the
  // even pattern and the floats just either side of it go to the nearer half.
  for (uint16_t lo = 0; lo < 0x7bff; ++lo) {
    const float a = halfToFloat(lo), b = halfToFloat(uint16_t(lo + 1));
    const float mid = (a + b) / 2;  // exact: a and b have 11 significant bits
    ASSERT_EQ(floatToHalf(mid), (lo & 1) ? lo + 1 : lo) << lo;
    ASSERT_EQ(floatToHalf(std::nextafter(mid, 0.0f)), lo) << lo;
    ASSERT_EQ(floatToHalf(std::nextafter(mid, kFloatInf)), lo + 1) << lo;
    ASSERT_EQ(floatToHalf(-mid), 0x8000 | ((lo & 1) ? lo + 1 : lo)) << lo;
  }
}

TEST(HalfFloat, OverflowUnderflowAndSpecials) {
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // the tie above the largest half rounds to inf (even)
  EXPECT_EQ(floatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(floatToHalf(-1e10f), 0xfc00);
  EXPECT_EQ(floatToHalf(kFloatInf), 0x7c00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie between 0 and the smallest subnormal
  EXPECT_EQ(floatToHalf(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);  // tie between 1 and 2 units → 2
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -40)), 0x0000);
  EXPECT_EQ(floatToHalf(-std::ldexp(1.0f, -40)), 0x8000);
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(std::ldexp(2047.0f, -25)), 0x0400);  // largest-subnormal tie rounds up to normal
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(floatToHalf(std::nanf("")) & 0x7e00, 0x7e00);
  EXPECT_EQ(floatToHalf(-std::nanf("")) & 0xfe00, 0xfe00);
  EXPECT_EQ(floatToHalf(fromBits(0x7f800001u)) & 0x7e00, 0x7e00);  // a signalling NaN does not become inf
}

TEST(BFloat16, KnownPatterns) {
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xc020), -2.5f);
  EXPECT_EQ(bfloat16ToFloat(0x7f80), kFloatInf);
  EXPECT_EQ(bfloat16ToFloat(0x0001), fromBits(0x00010000u));  // subnormal
  EXPECT_EQ(floatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);        // tie → even
  EXPECT_EQ(floatToBfloat16(1.0f + std::ldexp(3.0f, -8)), 0x3f82);        // tie → even (up)
  EXPECT_EQ(floatToBfloat16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past the largest bf16
  EXPECT_EQ(floatToBfloat16(-kFloatInf), 0xff80);
  EXPECT_EQ(floatToBfloat16(fromBits(0x00018000u)), 0x0002);  // subnormal tie → even
  EXPECT_EQ(floatToBfloat16(std::nanf("")) & 0x7fc0, 0x7fc0);
  EXPECT_EQ(floatToBfloat16(fromBits(0x7f800001u)) & 0x7fc0, 0x7fc0);  // NaN with only low payload bits
}

TEST(BFloat16, EveryPatternRoundTripsAndMidpointsRoundToEven) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = bfloat16ToFloat(uint16_t(h));
    ASSERT_EQ(bits(f), h << 16) << h;
    if (!std::isnan(f)) {
      ASSERT_EQ(floatToBfloat16(f), h) << h;
    }
  }
  for (uint32_t lo = 0; lo < 0x7f7f; ++lo) {
    const uint32_t mid = (lo << 16) | 0x8000u;  // exactly halfway to the next bf16
    ASSERT_EQ(floatToBfloat16(fromBits(mid)), (lo & 1) ? lo + 1 : lo) << lo;
    ASSERT_EQ(floatToBfloat16(fromBits(mid - 1)), lo) << lo;
    ASSERT_EQ(floatToBfloat16(fromBits(mid + 1)), lo + 1) << lo;
  }
}

}  // namespace
}  // namespace tl
