// analyzePlan / comparePlans: the gathered analyses of whole operator results.
#include "analysis/summary.h"

#include <gtest/gtest.h>

#include "ops/registry.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::near;

PlanResult<double> resultWithPlan(const MatD& plan) {
  PlanResult<double> r;
  r.plan = plan;
  r.rowTarget = VecD::Ones(plan.rows());
  r.colTarget = VecD::Ones(plan.cols());
  return r;
}

TEST(PlanSummary, IdentityPlan) {
  const int n = 6;
  const PlanAnalysis a = analyzePlan(resultWithPlan(MatD::Identity(n, n)));
  ASSERT_TRUE(a.rank.has_value());
  EXPECT_TRUE(near(a.rank->effective, n, 1e-12));
  EXPECT_EQ(a.rank->numerical, n);
  EXPECT_EQ(a.entropy.mean, 0.0);
  EXPECT_TRUE(near(a.columnMass.gini, 0.0, 1e-15));
  EXPECT_TRUE(near(a.columnMass.maxSum, 1.0, 1e-15));
}

TEST(PlanSummary, UniformPlan) {
  const int n = 9;
  const PlanAnalysis a = analyzePlan(resultWithPlan(MatD::Constant(n, n, 1.0 / n)));
  ASSERT_TRUE(a.rank.has_value());
  EXPECT_TRUE(near(a.rank->effective, 1.0, 1e-12));
  EXPECT_EQ(a.rank->numerical, 1);
  EXPECT_TRUE(near(a.entropy.mean, std::log(double(n)), 1e-12));
  EXPECT_TRUE(near(a.entropy.stddev, 0.0, 1e-12));
}

TEST(PlanSummary, MarginalErrorsAndTimingComeFromTheResult) {
  PlanResult<double> r = resultWithPlan(MatD::Identity(3, 3));
  r.errors = {0.1, 0.05, 0.2, 0.07};  // as reported by the operator, not recomputed
  r.massMismatch = true;
  r.seconds = 1.5;
  const PlanAnalysis a = analyzePlan(r);
  EXPECT_EQ(a.errors.rowMax, 0.1);
  EXPECT_EQ(a.errors.rowMean, 0.05);
  EXPECT_EQ(a.errors.colMax, 0.2);
  EXPECT_EQ(a.errors.colMean, 0.07);
  EXPECT_TRUE(a.massMismatch);
  EXPECT_EQ(a.seconds, 1.5);
}

TEST(PlanSummary, ComparisonOfARealOperatorPair) {
  const int n = 10;
  AttentionInput<double> in;
  in.Q = test::gaussian(n, 4, 11);
  in.K = test::gaussian(n, 4, 12);
  in.V = test::gaussian(n, 3, 13);
  const auto& registry = OperatorRegistry::builtin();
  const auto softmax = registry.create(registry.parse("softmax"))->run(in, noFeedback());
  const auto sinkhorn = registry.create(registry.parse("sinkhorn:T=20"))->run(in, noFeedback());

  const PlanComparison self = comparePlans(sinkhorn, sinkhorn);
  EXPECT_EQ(self.relativeFrobenius, 0.0);
  EXPECT_EQ(self.maxAbs, 0.0);
  EXPECT_EQ(self.meanRowKl, 0.0);
  ASSERT_TRUE(self.outputDifference.has_value());
  EXPECT_EQ(*self.outputDifference, 0.0);

  const PlanComparison c = comparePlans(sinkhorn, softmax);
  EXPECT_TRUE(near(c.relativeFrobenius, (sinkhorn.plan.dense() - softmax.plan.dense()).norm() / softmax.plan.dense().norm(), 1e-14));
  EXPECT_GT(c.meanRowKl, 0.0);
  ASSERT_TRUE(c.outputDifference.has_value());
  EXPECT_TRUE(near(*c.outputDifference, (*sinkhorn.output - *softmax.output).norm() / softmax.output->norm(), 1e-14));
  // A balanced Sinkhorn plan spreads column mass more evenly than softmax.
  EXPECT_LT(analyzePlan(sinkhorn).columnMass.gini, analyzePlan(softmax).columnMass.gini);
}

TEST(PlanSummary, NoOutputDifferenceWithoutValues) {
  const PlanComparison c = comparePlans(resultWithPlan(MatD::Identity(2, 2)), resultWithPlan(MatD::Identity(2, 2)));
  EXPECT_FALSE(c.outputDifference.has_value());
}

}  // namespace
}  // namespace tl
