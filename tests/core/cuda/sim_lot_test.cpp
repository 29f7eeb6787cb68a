// LOT's device path (ops/lot/lot_device.h) run on the simulated device (sim_device.h) against LOT's CPU
// reference: the orchestration around the dense kernels (two rectangular problems per launch, the output
// through the factors, the errors of the glued plan from the dual histories, pivots, masks, batching of a
// layer's heads) is checked without a GPU. The kernels themselves are checked in sim_kernels_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/errors.h"
#include "ops/lot/lot.h"
#include "ops/lot/lot_device.h"
#include "sim_kernels.h"
#include "support/test_util.h"

namespace tl {
namespace {

using cuda::test::simulatedKernels;

AttentionInput<float> head(int nq, int nk, int d, uint64_t seed, bool padded) {
  AttentionInput<float> in;
  in.Q = test::gaussian(nq, d, seed).cast<float>();
  in.K = test::gaussian(nk, d, seed + 1).cast<float>();
  in.V = MatF(test::gaussian(nk, 3, seed + 2).cast<float>());
  if (padded) {
    in.mask = Mask::Ones(nq);
    for (int i = 2; i < nq; i += 5) (*in.mask)(i) = false;
  }
  return in;
}

// Float32 against float32: the kernels' streaming log-sum-exp reorders sums, nothing more.
::testing::AssertionResult close(const MatF& device, const MatF& cpu, const std::string& what) {
  const float scale = std::max(1.f, cpu.cwiseAbs().maxCoeff());
  return test::matricesNear(device, cpu, 2e-5 * scale) << " (" << what << ")";
}

void expectMatchesCpu(const AttentionInput<float>& in, const LotParams& p) {
  const PlanResult<float> cpu = lotAttention(in, p);
  const PlanResult<float> dev = lotOnDevice({in}, p, simulatedKernels(), noFeedback()).front();
  EXPECT_EQ(dev.backend, Backend::Cuda);
  EXPECT_STREQ(dev.plan.kind(), "low-rank");
  EXPECT_TRUE(close(dev.plan.dense(), cpu.plan.dense(), "plan"));
  EXPECT_TRUE(close(*dev.output, *cpu.output, "output"));
  ASSERT_EQ(dev.errorHistory.size(), cpu.errorHistory.size());
  for (size_t t = 0; t < cpu.errorHistory.size(); ++t) {
    SCOPED_TRACE("step " + std::to_string(t + 1));
    EXPECT_NEAR(dev.errorHistory[t].rowMax, cpu.errorHistory[t].rowMax, 2e-5);
    EXPECT_NEAR(dev.errorHistory[t].rowMean, cpu.errorHistory[t].rowMean, 2e-5);
    EXPECT_NEAR(dev.errorHistory[t].colMax, cpu.errorHistory[t].colMax, 2e-5);
    EXPECT_NEAR(dev.errorHistory[t].colMean, cpu.errorHistory[t].colMean, 2e-5);
  }
  EXPECT_TRUE(close(dev.rowTarget, cpu.rowTarget, "row target"));
  EXPECT_TRUE(close(dev.colTarget, cpu.colTarget, "column target"));
  ASSERT_EQ(dev.extras.size(), cpu.extras.size());
  for (const auto& [name, reference] : cpu.extras) {
    ASSERT_TRUE(dev.extras.count(name)) << name;
    EXPECT_TRUE(close(dev.extras.at(name), reference, name));
  }
}

TEST(SimLot, SquareInputWithKMeansPivotsMatchesTheCpuReference) {
  LotParams p;
  p.r = 5;
  p.T = 4;
  expectMatchesCpu(head(40, 40, 16, 1, false), p);
}

TEST(SimLot, RectangularInputOddBudgetAndSmallEpsMatchTheCpuReference) {
  LotParams p;
  p.r = 4;
  p.T = 5;
  p.eps = 0.5;
  expectMatchesCpu(head(33, 57, 8, 2, false), p);
}

TEST(SimLot, GaussianPivotsWithUnequalMassesMatchTheCpuReference) {
  LotParams p;
  p.r = 6;
  p.T = 3;
  p.pivotInit = PivotInit::Gaussian;
  p.seed = 7;
  expectMatchesCpu(head(30, 30, 16, 3, false), p);
}

TEST(SimLot, PaddedTokensAreLeftOutAndTheFactorsPaddedLikeOnTheCpu) {
  LotParams p;
  p.r = 4;
  p.T = 2;
  expectMatchesCpu(head(41, 41, 16, 4, true), p);
}

// A layer's heads share the launches; each equals its own run bit for bit (40 tokens and 4 pivots fit one
// tile, so the batch cannot change the order of any sum).
TEST(SimLot, TheHeadsOfALayerInOneLaunchEqualTheirOwnRuns) {
  LotParams p;
  p.r = 4;
  p.T = 3;
  AttentionBatch<float> heads;
  for (uint64_t h = 0; h < 3; ++h) heads.push_back(head(40, 40, 16, 10 + 3 * h, true));
  const std::vector<PlanResult<float>> batched = lotOnDevice(heads, p, simulatedKernels(), noFeedback());
  ASSERT_EQ(batched.size(), heads.size());
  for (size_t h = 0; h < heads.size(); ++h) {
    const PlanResult<float> alone = lotOnDevice({heads[h]}, p, simulatedKernels(), noFeedback()).front();
    EXPECT_TRUE(test::matricesIdentical(*batched[h].output, *alone.output)) << "head " << h;
    EXPECT_TRUE(test::matricesIdentical(batched[h].extras.at("lot_P1"), alone.extras.at("lot_P1"))) << "head " << h;
    EXPECT_EQ(batched[h].errors.colMax, alone.errors.colMax) << "head " << h;
  }
}

TEST(SimLot, MorePivotsThanTokensIsRefusedLikeOnTheCpu) {
  LotParams p;
  p.r = 12;
  const AttentionInput<float> in = head(10, 10, 4, 5, false);
  EXPECT_THROW(lotAttention(in, p), InvalidArgument);
  EXPECT_THROW(lotOnDevice({in}, p, simulatedKernels(), noFeedback()), InvalidArgument);
}

}  // namespace
}  // namespace tl
