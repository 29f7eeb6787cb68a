// LOT's device path (ops/lot/lot_device.h) run on the simulated device (sim_device.h) against LOT's CPU
// reference: the orchestration around the dense kernels (two rectangular problems per launch, the output
// through the factors, the errors of the glued plan from the dual histories, pivots, masks, batching of a
// layer's heads) is checked without a GPU. The kernels themselves are checked in sim_kernels_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

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

// The heatmap's display tiles of a device result: means from the factors' block sums, maxima from the kernel over
// the uploaded factors (LowRankMaxKernel, run thread by thread on NaN-filled memory), against the default pooling
// of the plan's own dense matrix. 130 block columns need two thread blocks per block row.
TEST(SimLot, DisplayTilesOfADeviceResultMatchThoseOfItsDenseMatrix) {
  LotParams p;
  p.r = 4;
  p.T = 3;
  struct Grid {
    int nq, nk, rows, cols;
  };
  for (const Grid g : {Grid{70, 70, 8, 6}, Grid{33, 200, 33, 130}, Grid{10, 12, 64, 64}}) {
    const std::string label = std::to_string(g.nq) + " × " + std::to_string(g.nk);
    const PlanResult<float> dev = lotOnDevice({simHead(g.nq, g.nk, 16, 5, false)}, p, simulatedKernels(), noFeedback()).front();
    const PooledPlan<float> tiles = dev.plan.pooled(g.rows, g.cols);
    const PooledPlan<float> dense = DensePlan<float>(dev.plan.dense()).pooled(g.rows, g.cols);
    EXPECT_EQ(tiles.rowStarts, dense.rowStarts) << label;
    EXPECT_EQ(tiles.colStarts, dense.colStarts) << label;
    EXPECT_TRUE(cuda::test::closeToCpu(tiles.mean, dense.mean, "block means " + label, 1e-6));
    EXPECT_TRUE(cuda::test::closeToCpu(tiles.max, dense.max, "block maxima " + label, 1e-6));
  }
}

TEST(SimLot, LowRankDisplayTilesRefuseAGridFinerThanThePlan) {
  const std::vector<float> f(6, 1.f), gT(8, 1.f);  // 3 × 2 and 4 × 2
  const cuda::LowRankFactors factors{3, 4, 2, f.data(), gT.data()};
  EXPECT_EQ(simulatedKernels().lowRankMaxima(factors, 3, 4), std::vector<float>(12, 2.f));
  EXPECT_THROW(simulatedKernels().lowRankMaxima(factors, 4, 4), InvalidArgument);
  EXPECT_THROW(simulatedKernels().lowRankMaxima(factors, 3, 0), InvalidArgument);
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
