#pragma once
// Shared by the tests that run a family's device path on the simulated device against the family's CPU
// reference (sim_lot_test.cpp, sim_banded_test.cpp): the test heads and the field-by-field comparison.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "common/attention_input.h"
#include "ops/backend.h"
#include "ops/plan_result.h"
#include "support/test_util.h"

namespace tl::cuda::test {

// Gaussian q, k and a 3-column v; `padded`: every fifth query from the third on is masked out.
inline AttentionInput<float> simHead(int nq, int nk, int d, uint64_t seed, bool padded) {
  AttentionInput<float> in;
  in.Q = tl::test::gaussian(nq, d, seed).cast<float>();
  in.K = tl::test::gaussian(nk, d, seed + 1).cast<float>();
  in.V = MatF(tl::test::gaussian(nk, 3, seed + 2).cast<float>());
  if (padded) {
    in.mask = Mask::Ones(nq);
    for (int i = 2; i < nq; i += 5) (*in.mask)(i) = false;
  }
  return in;
}

// Float32 against float32: the kernels' streaming log-sum-exp and tile products reorder sums, nothing more;
// the tolerance is relative to max(1, max|cpu|).
inline ::testing::AssertionResult closeToCpu(const MatF& device, const MatF& cpu, const std::string& what,
                                             double tol = 2e-5) {
  const float scale = std::max(1.f, cpu.cwiseAbs().maxCoeff());
  return tl::test::matricesNear(device, cpu, tol * scale) << " (" << what << ")";
}

// The fields every device path shares with its CPU reference: the backend, the plan's kind and entries, the
// output, the error history, the marginal targets and the family's extras.
inline void expectSharedFieldsMatchCpu(const PlanResult<float>& dev, const PlanResult<float>& cpu,
                                       const char* planKind) {
  EXPECT_EQ(dev.backend, Backend::Cuda);
  EXPECT_STREQ(dev.plan.kind(), planKind);
  EXPECT_TRUE(closeToCpu(dev.plan.dense(), cpu.plan.dense(), "plan"));
  EXPECT_TRUE(closeToCpu(*dev.output, *cpu.output, "output"));
  ASSERT_EQ(dev.errorHistory.size(), cpu.errorHistory.size());
  for (size_t t = 0; t < cpu.errorHistory.size(); ++t) {
    SCOPED_TRACE("step " + std::to_string(t + 1));
    EXPECT_NEAR(dev.errorHistory[t].rowMax, cpu.errorHistory[t].rowMax, 2e-5);
    EXPECT_NEAR(dev.errorHistory[t].rowMean, cpu.errorHistory[t].rowMean, 2e-5);
    EXPECT_NEAR(dev.errorHistory[t].colMax, cpu.errorHistory[t].colMax, 2e-5);
    EXPECT_NEAR(dev.errorHistory[t].colMean, cpu.errorHistory[t].colMean, 2e-5);
  }
  EXPECT_TRUE(closeToCpu(dev.rowTarget, cpu.rowTarget, "row target"));
  EXPECT_TRUE(closeToCpu(dev.colTarget, cpu.colTarget, "column target"));
  ASSERT_EQ(dev.extras.size(), cpu.extras.size());
  for (const auto& [name, reference] : cpu.extras) {
    ASSERT_TRUE(dev.extras.count(name)) << name;
    EXPECT_TRUE(closeToCpu(dev.extras.at(name), reference, name));
  }
}

}  // namespace tl::cuda::test
