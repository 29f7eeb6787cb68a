// Plan-to-plan distances: relative Frobenius, max abs, mean row KL; the output difference.
#include "analysis/plan_distance.h"

#include <gtest/gtest.h>

#include <cmath>

#include "support/test_util.h"

namespace tl {
namespace {

using test::near;

// A row-stochastic plan with positive entries (row softmax of Gaussian scores).
MatD positivePlan(int rows, int cols, uint64_t seed) {
  return test::referenceRowSoftmax(test::gaussian(rows, cols, seed));
}

TEST(PlanDistance, ZeroToSelf) {
  const MatD A = positivePlan(6, 5, 1);
  EXPECT_EQ(relativeFrobenius(A, A), 0.0);
  EXPECT_EQ(maxAbsDifference(A, A), 0.0);
  EXPECT_EQ(meanRowKl(A, A), 0.0);
  const MatD I = MatD::Identity(4, 4);  // zeros on both sides: 0 log 0 = 0
  EXPECT_EQ(meanRowKl(I, I), 0.0);
}

TEST(PlanDistance, SymmetryAndNonNegativity) {
  const MatD A = positivePlan(7, 7, 2), B = positivePlan(7, 7, 3);
  EXPECT_EQ(maxAbsDifference(A, B), maxAbsDifference(B, A));
  // Relative Frobenius is scaled by the reference; the absolute norm underneath is symmetric.
  EXPECT_TRUE(near(relativeFrobenius(A, B) * B.norm(), relativeFrobenius(B, A) * A.norm(), 1e-15));
  EXPECT_GT(meanRowKl(A, B), 0.0);
  EXPECT_GT(meanRowKl(B, A), 0.0);
  EXPECT_NE(meanRowKl(A, B), meanRowKl(B, A));  // KL is not symmetric
}

TEST(PlanDistance, KnownTwoByTwo) {
  MatD A(2, 2), B(2, 2);
  A << 0.5, 0.5,  //
      1.0, 0.0;
  B << 0.75, 0.25,  //
      0.5, 0.5;
  // ‖A − B‖_F = sqrt(2·0.25² + 2·0.5²), ‖B‖_F = sqrt(0.75² + 0.25² + 2·0.5²).
  EXPECT_TRUE(near(relativeFrobenius(A, B), std::sqrt(0.625) / std::sqrt(1.125), 1e-15));
  EXPECT_EQ(maxAbsDifference(A, B), 0.5);
  // Row 0: ½ log(½/¾) + ½ log(½/¼) = ½ log(4/3); row 1: 1·log(1/½) + 0 = log 2.
  EXPECT_TRUE(near(meanRowKl(A, B), (0.5 * std::log(4.0 / 3.0) + std::log(2.0)) / 2, 1e-15));
  // The other way round the reference has a zero where A's row 1 has mass: infinite.
  EXPECT_TRUE(std::isinf(meanRowKl(B, A)));
}

TEST(PlanDistance, RowKlNormalisesRowsAndSkipsRowsWithoutMass) {
  MatD A(3, 2), B(3, 2);
  A << 0.5, 0.5,  //
      0.0, 0.0,   // padded query
      0.2, 0.6;   // sums to 0.8, same distribution as B's row
  B << 0.5, 0.5,  //
      0.3, 0.7,   //
      0.25, 0.75;
  EXPECT_TRUE(near(meanRowKl(A, B), 0.0, 1e-16));
  EXPECT_EQ(meanRowKl(MatD::Zero(2, 2), MatD::Zero(2, 2)), 0.0);
}

TEST(PlanDistance, RowKlIsUndefinedForMapsWithNegativeEntries) {
  MatD signedMap(2, 2), plan(2, 2);
  signedMap << 0.7, -0.2,  // a diff map's row: sums to 1 − λ, one entry below 0
      0.3, 0.2;
  plan << 0.5, 0.5,  //
      0.5, 0.5;
  EXPECT_TRUE(std::isnan(meanRowKl(signedMap, plan)));
  EXPECT_TRUE(std::isnan(meanRowKl(plan, signedMap)));
  EXPECT_FALSE(std::isnan(meanRowKl(plan, plan)));
}

TEST(PlanDistance, ZeroReferenceAndShapeMismatch) {
  const MatD Z = MatD::Zero(2, 3);
  EXPECT_EQ(relativeFrobenius(Z, Z), 0.0);
  EXPECT_TRUE(std::isinf(relativeFrobenius(MatD::Ones(2, 3), Z)));
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { (void)maxAbsDifference(MatD::Zero(2, 2), MatD::Zero(2, 3)); },
                                                {"2x2", "2x3"}));
}

TEST(PlanDistance, RmsDifferenceIsTheRootMeanSquareOfTheEntrywiseDifference) {
  MatD a(2, 2), b(2, 2);
  a << 1, 2, 3, 4;
  b << 1, 0, 3, 8;  // differences 0, 2, 0, −4: mean square 20/4
  EXPECT_TRUE(near(rmsDifference(a, b), std::sqrt(5.0), 1e-15));
  EXPECT_EQ(rmsDifference(a, b), rmsDifference(b, a));
  EXPECT_EQ(rmsDifference(a, a), 0.0);
  EXPECT_EQ(rmsDifference(MatD(0, 3), MatD(0, 3)), 0.0);
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([] { (void)rmsDifference(MatD::Zero(2, 2), MatD::Zero(3, 2)); },
                                                {"2x2", "3x2"}));
}

TEST(PlanDistance, OutputDifferenceIsZeroForIdenticalPlansAndScaleFree) {
  const MatD A = positivePlan(5, 5, 4), B = positivePlan(5, 5, 5), V = test::gaussian(5, 3, 6);
  EXPECT_EQ(relativeFrobenius(A * V, A * V), 0.0);
  const double d = relativeFrobenius(A * V, B * V);
  EXPECT_GT(d, 0.0);
  EXPECT_TRUE(near(relativeFrobenius(A * (10 * V), B * (10 * V)), d, 1e-14));
}

}  // namespace
}  // namespace tl
