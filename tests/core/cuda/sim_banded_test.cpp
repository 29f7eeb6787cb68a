// Banded Sinkhorn's device path (ops/banded/banded_device.h) run on the simulated device (sim_device.h)
// against banded's CPU reference, beyond the equivalence suite's small sizes: bands narrower than a tile and
// wider than one, several row tiles, rectangles with inactive rows or columns, the dustbin, padding, a base or
// a tail alone, and the plan (the CPU's band, formed at once or when first asked). Plus the band's tile range,
// which is what keeps the work O(n·W): a row tile visits only the key tiles its band meets.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "common/errors.h"
#include "cuda/band_kernels.h"
#include "ops/banded/banded.h"
#include "ops/banded/banded_device.h"
#include "ops/banded/banded_test_util.h"
#include "sim_kernels.h"
#include "sim_path_support.h"
#include "support/test_util.h"

namespace tl {
namespace {

using cuda::test::expectSharedFieldsMatchCpu;
using cuda::test::simHead;
using cuda::test::simulatedKernels;

BandedParams params(int W, int base = 3, int tail = 2, double eps = 1.0, bool dustbin = false) {
  BandedParams p = test::bandedParams(W, base, tail, eps, dustbin);
  p.tile = 16;
  return p;
}

void expectMatchesCpu(const AttentionInput<float>& in, const BandedParams& p, bool densePlan = false) {
  const PlanResult<float> cpu = bandedAttention(in, p);
  const PlanResult<float> dev =
      bandedOnDevice({in}, p, DeviceRequest{densePlan}, simulatedKernels(), noFeedback()).front();
  expectSharedFieldsMatchCpu(dev, cpu, "band");
  // Duals in score coordinates: their scale is that of the scores over eps.
  const float dualScale = std::max(1.f, cpu.u.cwiseAbs().maxCoeff()) * 2e-5f;
  EXPECT_TRUE(test::matricesNear(dev.u, cpu.u, dualScale)) << "u";
  EXPECT_TRUE(test::matricesNear(dev.v, cpu.v, dualScale)) << "v";
  EXPECT_TRUE(test::matricesNear(dev.uHistory, cpu.uHistory, dualScale)) << "u history";
  EXPECT_TRUE(test::matricesNear(dev.vHistory, cpu.vHistory, dualScale)) << "v history";
  // The same support: the band's entries, one for one.
  const auto devEntries = dev.plan.structure()->storedEntries(), cpuEntries = cpu.plan.structure()->storedEntries();
  ASSERT_TRUE(devEntries && cpuEntries);
  ASSERT_EQ(devEntries->size(), cpuEntries->size());
  for (size_t e = 0; e < cpuEntries->size(); ++e) {
    ASSERT_EQ((*devEntries)[e].row, (*cpuEntries)[e].row);
    ASSERT_EQ((*devEntries)[e].col, (*cpuEntries)[e].col);
  }
}

TEST(SimBanded, ABandNarrowerThanATileOverSeveralRowTilesMatchesTheCpuReference) {
  expectMatchesCpu(simHead(200, 200, 16, 1, false), params(5));
}

TEST(SimBanded, TheDiagonalAloneAndABandWiderThanATileMatchTheCpuReference) {
  expectMatchesCpu(simHead(150, 150, 8, 2, false), params(0));
  expectMatchesCpu(simHead(150, 150, 8, 3, false), params(70, 2, 1, 0.5));
}

TEST(SimBanded, RectanglesWithInactiveRowsOrColumnsMatchTheCpuReference) {
  expectMatchesCpu(simHead(150, 90, 16, 4, false), params(10));  // rows i ≥ 100 have no support
  expectMatchesCpu(simHead(90, 150, 16, 5, false), params(10));  // columns j ≥ 100 have none
}

TEST(SimBanded, TheDustbinMatchesTheCpuReference) {
  expectMatchesCpu(simHead(70, 70, 16, 6, false), params(3, 2, 2, 1.0, true));
  expectMatchesCpu(simHead(40, 65, 16, 7, false), params(2, 1, 1, 1.0, true));
}

TEST(SimBanded, PaddedTokensAreCountedAmongTheValidOnesLikeOnTheCpu) {
  expectMatchesCpu(simHead(99, 99, 16, 8, true), params(4));
}

TEST(SimBanded, ABaseAloneOrATailAloneMatchesTheCpuReference) {
  expectMatchesCpu(simHead(80, 80, 16, 9, false), params(6, 4, 0));
  expectMatchesCpu(simHead(80, 80, 16, 10, false), params(6, 0, 3, 0.3));
}

TEST(SimBanded, ThePlanAskedForAtOnceEqualsThePlanFormedWhenFirstUsed) {
  const AttentionInput<float> in = simHead(130, 130, 16, 11, false);
  const BandedParams p = params(9);
  expectMatchesCpu(in, p, true);
  const PlanResult<float> eager = bandedOnDevice({in}, p, DeviceRequest{true}, simulatedKernels(), noFeedback()).front();
  const PlanResult<float> lazy = bandedOnDevice({in}, p, DeviceRequest{false}, simulatedKernels(), noFeedback()).front();
  EXPECT_TRUE(test::matricesIdentical(eager.plan.dense(), lazy.plan.dense()));
}

TEST(SimBanded, BadParametersAreRefusedLikeOnTheCpu) {
  const AttentionInput<float> in = simHead(10, 10, 4, 12, false);
  const BandedParams p = params(2, 0, 0);
  EXPECT_THROW(bandedAttention(in, p), InvalidArgument);
  EXPECT_THROW(bandedOnDevice({in}, p, DeviceRequest{}, simulatedKernels(), noFeedback()), InvalidArgument);
}

TEST(SimBanded, ARowTileVisitsOnlyTheKeyTilesItsBandMeets) {
  using cuda::bandKeyTiles;
  // Rows [128, 192) with W = 5 reach keys 123 … 196: key tiles 1, 2 and 3 of 64.
  EXPECT_EQ(bandKeyTiles(128, 64, 64, 5, 1000).first, 1);
  EXPECT_EQ(bandKeyTiles(128, 64, 64, 5, 1000).last, 4);
  // W = 0 on the first tile: the diagonal, one key tile.
  EXPECT_EQ(bandKeyTiles(0, 64, 64, 0, 1000).first, 0);
  EXPECT_EQ(bandKeyTiles(0, 64, 64, 0, 1000).last, 1);
  // Clipped at the last key.
  EXPECT_EQ(bandKeyTiles(64, 64, 64, 1000, 100).last, 2);
  // Rows beyond the last key's band (a rectangle's inactive rows): no tile at all.
  const cuda::IndexRange none = bandKeyTiles(192, 64, 64, 10, 100);
  EXPECT_EQ(none.first, none.last);
}

}  // namespace
}  // namespace tl
