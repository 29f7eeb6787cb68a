// Effective rank (exp of the entropy of normalised singular values) and numerical rank.
#include "analysis/rank.h"

#include <gtest/gtest.h>

#include <cfloat>

#include "support/test_util.h"

namespace tl {
namespace {

using test::near;

TEST(PlanRank, IdentityHasFullRank) {
  for (int n : {1, 4, 17}) {
    const PlanRank r = planRank(MatD::Identity(n, n));
    EXPECT_TRUE(near(r.effective, double(n), 1e-12)) << "n=" << n;
    EXPECT_EQ(r.numerical, n);
  }
}

TEST(PlanRank, UniformPlanHasRankOne) {
  for (int n : {2, 9, 64}) {
    const PlanRank r = planRank(MatD::Constant(n, n, 1.0 / n));
    EXPECT_TRUE(near(r.effective, 1.0, 1e-12)) << "n=" << n;
    EXPECT_EQ(r.numerical, 1) << "n=" << n;
  }
}

TEST(PlanRank, KnownSpectrum) {
  // diag(3, 1, 0): p = (3/4, 1/4, 0), effective rank exp(−¾ log ¾ − ¼ log ¼); numerical rank 2.
  VecD d(3);
  d << 3, 1, 0;
  const PlanRank r = planRank(d.asDiagonal().toDenseMatrix());
  EXPECT_TRUE(near(r.effective, std::exp(-0.75 * std::log(0.75) - 0.25 * std::log(0.25)), 1e-12));
  EXPECT_EQ(r.numerical, 2);
  EXPECT_TRUE(near(r.tolerance, 3 * 3 * std::numeric_limits<double>::epsilon(), 1e-30));
}

TEST(PlanRank, RoundoffSetsWhatCountsAsNoise) {
  // A rank-one plan plus float32-sized noise: full rank at double roundoff, rank one at float roundoff.
  const int n = 12;
  const MatD A = MatD::Constant(n, n, 1.0 / n) + 1e-9 * test::gaussian(n, n, 7);
  EXPECT_EQ(planRank(A).numerical, n);
  EXPECT_EQ(planRank(A, FLT_EPSILON).numerical, 1);
}

TEST(PlanRank, RectangularAndZeroPlans) {
  MatD A = MatD::Zero(3, 5);
  EXPECT_EQ(planRank(A).numerical, 0);
  EXPECT_EQ(planRank(A).effective, 0.0);
  A(0, 1) = 1;
  A(2, 4) = 1;
  const PlanRank r = planRank(A);
  EXPECT_EQ(r.numerical, 2);
  EXPECT_TRUE(near(r.effective, 2.0, 1e-12));
}

}  // namespace
}  // namespace tl
