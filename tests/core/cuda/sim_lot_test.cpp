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
#include "sim_path_support.h"
#include "support/test_util.h"

namespace tl {
namespace {

using cuda::test::expectSharedFieldsMatchCpu;
using cuda::test::simHead;
using cuda::test::simulatedKernels;

void expectMatchesCpu(const AttentionInput<float>& in, const LotParams& p) {
  const PlanResult<float> cpu = lotAttention(in, p);
  const PlanResult<float> dev = lotOnDevice({in}, p, simulatedKernels(), noFeedback()).front();
  expectSharedFieldsMatchCpu(dev, cpu, "low-rank");
}

TEST(SimLot, SquareInputWithKMeansPivotsMatchesTheCpuReference) {
  LotParams p;
  p.r = 5;
  p.T = 4;
  expectMatchesCpu(simHead(40, 40, 16, 1, false), p);
}

TEST(SimLot, RectangularInputOddBudgetAndSmallEpsMatchTheCpuReference) {
  LotParams p;
  p.r = 4;
  p.T = 5;
  p.eps = 0.5;
  expectMatchesCpu(simHead(33, 57, 8, 2, false), p);
}

TEST(SimLot, GaussianPivotsWithUnequalMassesMatchTheCpuReference) {
  LotParams p;
  p.r = 6;
  p.T = 3;
  p.pivotInit = PivotInit::Gaussian;
  p.seed = 7;
  expectMatchesCpu(simHead(30, 30, 16, 3, false), p);
}

TEST(SimLot, PaddedTokensAreLeftOutAndTheFactorsPaddedLikeOnTheCpu) {
  LotParams p;
  p.r = 4;
  p.T = 2;
  expectMatchesCpu(simHead(41, 41, 16, 4, true), p);
}

// A layer's heads share the launches; each equals its own run bit for bit (40 tokens and 4 pivots fit one
// tile, so the batch cannot change the order of any sum).
TEST(SimLot, TheHeadsOfALayerInOneLaunchEqualTheirOwnRuns) {
  LotParams p;
  p.r = 4;
  p.T = 3;
  AttentionBatch<float> heads;
  for (uint64_t h = 0; h < 3; ++h) heads.push_back(simHead(40, 40, 16, 10 + 3 * h, true));
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
  const AttentionInput<float> in = simHead(10, 10, 4, 5, false);
  EXPECT_THROW(lotAttention(in, p), InvalidArgument);
  EXPECT_THROW(lotOnDevice({in}, p, simulatedKernels(), noFeedback()), InvalidArgument);
}

}  // namespace
}  // namespace tl
