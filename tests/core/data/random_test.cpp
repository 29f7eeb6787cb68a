// Seeded randomness: identical streams for identical seeds, sane distributions.
#include "data/random.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tl {
namespace {

TEST(SeededRandom, SameSeedSameStream) {
  SeededRandom a(42), b(42), c(43);
  bool anyDifferent = false;
  for (int i = 0; i < 1000; ++i) {
    const double x = a.normal(), y = b.normal(), z = c.normal();
    ASSERT_EQ(x, y) << "draw " << i;
    anyDifferent |= (x != z);
    ASSERT_EQ(a.uniform(), b.uniform());
  }
  EXPECT_TRUE(anyDifferent);
}

// Skipping k normals leaves the stream where k calls of normal() leave it, with or without a spare pending.
TEST(SeededRandom, SkipNormalsMatchesDrawingThem) {
  for (int before = 0; before < 3; ++before)
    for (uint64_t k = 0; k < 8; ++k) {
      SeededRandom drawn(9), skipped(9);
      for (int i = 0; i < before; ++i) ASSERT_EQ(drawn.normal(), skipped.normal());
      for (uint64_t i = 0; i < k; ++i) drawn.normal();
      skipped.skipNormals(k);
      for (int i = 0; i < 3; ++i) ASSERT_EQ(drawn.normal(), skipped.normal()) << before << " " << k << " " << i;
      ASSERT_EQ(drawn.uniform(), skipped.uniform());
    }
}

TEST(SeededRandom, UniformInUnitInterval) {
  SeededRandom r(1);
  double sum = 0;
  const int N = 100000;
  for (int i = 0; i < N; ++i) {
    const double u = r.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    sum += u;
  }
  EXPECT_NEAR(sum / N, 0.5, 0.01);
}

TEST(SeededRandom, NormalMomentsAndFiniteness) {
  SeededRandom r(7);
  const int N = 200000;
  double s = 0, s2 = 0;
  for (int i = 0; i < N; ++i) {
    const double x = r.normal();
    ASSERT_TRUE(std::isfinite(x)) << "draw " << i;
    s += x;
    s2 += x * x;
  }
  const double mean = s / N, var = s2 / N - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.02);  // standard error 0.0022
  EXPECT_NEAR(var, 1.0, 0.02);   // standard error 0.0032
}

}  // namespace
}  // namespace tl
