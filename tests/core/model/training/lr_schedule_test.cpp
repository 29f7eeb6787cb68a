#include "model/training/lr_schedule.h"

#include <gtest/gtest.h>

namespace tl {
namespace {

TEST(LrSchedule, WarmsUpLinearlyThenFollowsAHalfCosineToZero) {
  const LrSchedule s = warmupCosine(1e-3, 0.1, 100);
  EXPECT_EQ(s.warmupSteps, 10);
  EXPECT_DOUBLE_EQ(learningRate(s, 0), 1e-4);
  EXPECT_DOUBLE_EQ(learningRate(s, 9), 1e-3);
  EXPECT_DOUBLE_EQ(learningRate(s, 10), 1e-3);       // the cosine starts at its peak
  EXPECT_NEAR(learningRate(s, 55), 0.5e-3, 1e-15);   // halfway through the decay
  EXPECT_GT(learningRate(s, 99), 0);
  EXPECT_EQ(learningRate(s, 100), 0);
  for (int64_t step = 10; step < 99; ++step) EXPECT_GT(learningRate(s, step), learningRate(s, step + 1));
}

TEST(LrSchedule, AlwaysWarmsUpForAtLeastOneStepAndNeverPastTheEnd) {
  EXPECT_EQ(warmupCosine(1e-3, 0, 50).warmupSteps, 1);
  EXPECT_EQ(warmupCosine(1e-3, 1, 50).warmupSteps, 50);
  EXPECT_DOUBLE_EQ(learningRate(warmupCosine(1e-3, 1, 50), 49), 1e-3);
  EXPECT_EQ(warmupCosine(1e-3, 0.05, 0).totalSteps, 1);
}

}  // namespace
}  // namespace tl
