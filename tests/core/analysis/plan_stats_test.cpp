// Diagnostics from dense plans: row entropy and marginal errors against declared targets.
#include "analysis/plan_stats.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace tl {
namespace {

using test::near;

TEST(PlanStats, UniformRowsHaveEntropyLogN) {
  for (int n : {1, 2, 7, 64}) {
    const MatD A = MatD::Constant(n, n, 1.0 / n);
    const RowEntropy h = rowEntropy(A);
    EXPECT_TRUE(near(h.mean, std::log(double(n)), 1e-12)) << "n=" << n;
    EXPECT_TRUE(near(h.stddev, 0.0, 1e-12)) << "n=" << n;
  }
}

TEST(PlanStats, PermutationHasZeroEntropy) {
  const int n = 6;
  const std::vector<int> perm = {3, 0, 5, 1, 4, 2};
  MatD A = MatD::Zero(n, n);
  for (int i = 0; i < n; ++i) A(i, perm[i]) = 1.0;
  const RowEntropy h = rowEntropy(A);
  EXPECT_FALSE(std::isnan(h.mean)) << "0 log 0 must count as 0";
  EXPECT_EQ(h.mean, 0.0);
  EXPECT_EQ(h.stddev, 0.0);
}

TEST(PlanStats, MixedRowsAndRowsWithoutMass) {
  // Row 0 uniform over 4 (log 4), row 1 a point mass (0), row 2 padded (no mass: skipped).
  MatD A = MatD::Zero(3, 4);
  A.row(0).setConstant(0.25);
  A(1, 2) = 1.0;
  const RowEntropy h = rowEntropy(A);
  EXPECT_TRUE(near(h.mean, std::log(4.0) / 2, 1e-12));
  // Population or sample stddev of {log 4, 0}: accept either definition, but it must be one of them.
  const double pop = std::log(4.0) / 2, sample = std::log(4.0) / std::sqrt(2.0);
  EXPECT_TRUE(near(h.stddev, pop, 1e-12) || near(h.stddev, sample, 1e-12)) << h.stddev;
}

TEST(PlanStats, EntropyIsUndefinedForMapsWithNegativeEntries) {
  // A diff map's row (sums to 1 − λ = 0.5, one entry below 0) is no distribution: no entropy, rather than one that
  // skips the negative entry.
  MatD A(2, 2);
  A << 0.7, -0.2,  //
      0.25, 0.25;
  const RowEntropy h = rowEntropy(A);
  EXPECT_TRUE(std::isnan(h.mean));
  EXPECT_TRUE(std::isnan(h.stddev));
  A(0, 1) = 0.0;  // the same rows without the negative entry have one
  EXPECT_TRUE(near(rowEntropy(A).mean, std::log(2.0) / 2, 1e-12));
}

TEST(PlanStats, MarginalErrorsAgainstTargets) {
  MatD A(2, 3);
  A << 0.5, 0.25, 0.25,  // row sum 1.0
      0.1, 0.2, 0.4;     // row sum 0.7
  // column sums 0.6, 0.45, 0.65
  VecD rowTarget(2), colTarget(3);
  rowTarget << 1.0, 1.0;
  colTarget << 1.0, 0.5, 0.0;
  const MarginalErrors e = marginalErrors(A, rowTarget, colTarget);
  EXPECT_TRUE(near(e.rowMax, 0.3, 1e-15));
  EXPECT_TRUE(near(e.rowMean, 0.15, 1e-15));
  EXPECT_TRUE(near(e.colMax, 0.65, 1e-15));
  EXPECT_TRUE(near(e.colMean, (0.4 + 0.05 + 0.65) / 3, 1e-15));
}

TEST(PlanStats, BalancedPlanHasZeroErrors) {
  const int n = 5;
  const MatD A = MatD::Constant(n, n, 1.0 / n);
  const MarginalErrors e = marginalErrors(A, VecD::Ones(n), VecD::Ones(n));
  EXPECT_LE(e.rowMax, 1e-15);
  EXPECT_LE(e.colMax, 1e-15);
}

}  // namespace
}  // namespace tl
