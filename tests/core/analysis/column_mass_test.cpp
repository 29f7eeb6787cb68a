// Column-mass ("attention sink") statistics: max column sum and the Gini of column sums.
#include "analysis/column_mass.h"

#include <gtest/gtest.h>

#include "support/test_util.h"

namespace tl {
namespace {

using test::near;

MatD permutation(const std::vector<int>& perm) {
  MatD A = MatD::Zero(Eigen::Index(perm.size()), Eigen::Index(perm.size()));
  for (size_t i = 0; i < perm.size(); ++i) A(Eigen::Index(i), perm[i]) = 1.0;
  return A;
}

TEST(ColumnMass, DoublyStochasticPlansHaveGiniZeroAndUnitColumns) {
  for (const MatD& A : {MatD(MatD::Identity(5, 5)), permutation({2, 0, 3, 1}), MatD(MatD::Constant(7, 7, 1.0 / 7))}) {
    const ColumnMass c = columnMass(A);
    EXPECT_TRUE(near(c.gini, 0.0, 1e-15));
    EXPECT_TRUE(near(c.maxSum, 1.0, 1e-15));
  }
}

TEST(ColumnMass, AllMassInOneColumnIsTheExtremeSink) {
  for (int n : {2, 3, 8, 33}) {
    MatD A = MatD::Zero(n, n);
    A.col(n / 2).setOnes();  // every query attends to one key
    const ColumnMass c = columnMass(A);
    EXPECT_TRUE(near(c.gini, double(n - 1) / n, 1e-14)) << "n=" << n;
    EXPECT_TRUE(near(c.maxSum, double(n), 1e-15)) << "n=" << n;
  }
}

TEST(ColumnMass, GiniMatchesThePairwiseDefinition) {
  VecD x(5);
  x << 0.3, 2.0, 0.0, 1.1, 0.6;
  double pairs = 0;
  for (int a = 0; a < 5; ++a)
    for (int b = 0; b < 5; ++b) pairs += std::abs(x(a) - x(b));
  EXPECT_TRUE(near(giniCoefficient(x), pairs / (2 * 5 * x.sum()), 1e-15));
}

TEST(ColumnMass, GiniIsScaleInvariantAndZeroWithoutMass) {
  VecD x(3);
  x << 1.0, 2.0, 3.0;
  EXPECT_TRUE(near(giniCoefficient(x), giniCoefficient((1e-6 * x).eval()), 1e-14));
  EXPECT_EQ(giniCoefficient(VecD::Zero(4)), 0.0);
  EXPECT_EQ(giniCoefficient(VecD()), 0.0);
}

TEST(ColumnMass, PaddedColumnsAreLeftOutOfTheGini) {
  // Columns 0..2 valid and balanced, column 3 padded (target 0, empty by construction).
  MatD A = MatD::Zero(3, 4);
  A.leftCols(3).setConstant(1.0 / 3);
  VecD target(4);
  target << 1, 1, 1, 0;
  EXPECT_TRUE(near(columnMass(A, target).gini, 0.0, 1e-15));
  EXPECT_GT(columnMass(A).gini, 0.2);  // counted as a column, the padding would look like inequality
  EXPECT_TRUE(test::throwsWith<InvalidArgument>([&] { (void)columnMass(A, VecD::Ones(3)); }, {"column targets"}));
}

}  // namespace
}  // namespace tl
