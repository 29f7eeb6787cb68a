// Hard ESP's device path (ops/esp/esp_device.h) run on the simulated device (sim_device.h) against ESP's CPU
// reference, on what the equivalence suite's random inputs cannot reach: ties (duplicated tokens, so the
// device's tie counts send those slices' blocks to the host), a tie group of the whole sequence, ties with
// unequal sizes under both rank couplings, the break rule, a general cost exponent, padding beside ties, and
// the dense plan on request.
#include <gtest/gtest.h>

#include "ops/esp/esp.h"
#include "ops/esp/esp_device.h"
#include "ops/registry.h"
#include "sim_kernels.h"
#include "sim_path_support.h"
#include "support/test_util.h"

namespace tl {
namespace {

using cuda::test::expectSharedFieldsMatchCpu;
using cuda::test::simHead;
using cuda::test::simulatedKernels;

// Rows r with r % period != 0 repeat the row before them: runs of `period` equal tokens.
void duplicateRuns(MatF& m, int period) {
  for (Eigen::Index r = 1; r < m.rows(); ++r)
    if (r % period != 0) m.row(r) = m.row(r - 1);
}

AttentionInput<float> tiedHead(int nq, int nk, int d, uint64_t seed) {
  AttentionInput<float> in = simHead(nq, nk, d, seed, false);
  duplicateRuns(in.Q, 3);
  duplicateRuns(in.K, 2);
  return in;
}

PlanResult<float> expectMatchesCpu(const AttentionInput<float>& in, const EspParams& p,
                                   DeviceRequest request = {}) {
  const PlanResult<float> cpu = espAttention(in, p);
  const PlanResult<float> dev = espOnDevice({in}, p, request, simulatedKernels(), noFeedback()).front();
  expectSharedFieldsMatchCpu(dev, cpu, request.densePlan ? "dense" : "sliced");
  return dev;
}

double tiedTokens(const PlanResult<float>& r) { return r.extras.at(EspExtras::ties).sum(); }

TEST(SimEsp, DuplicatedTokensSplitTheirTieGroupsAsOnTheCpu) {
  EspParams p;
  const PlanResult<float> dev = expectMatchesCpu(tiedHead(24, 24, 8, 1), p);
  EXPECT_GT(tiedTokens(dev), 0) << "the case must have ties";
}

TEST(SimEsp, DuplicatedTokensUnderTheBreakRuleMatchTheCpu) {
  EspParams p;
  p.ties = TiePolicy::Break;
  EXPECT_GT(tiedTokens(expectMatchesCpu(tiedHead(24, 24, 8, 2), p)), 0);
}

TEST(SimEsp, TiesWithUnequalSizesMatchUnderBothRankCouplings) {
  for (RankCoupling coupling : {RankCoupling::NorthWestCorner, RankCoupling::Interpolation})
    for (auto [nq, nk] : {std::pair{14, 9}, {9, 14}}) {
      SCOPED_TRACE(std::to_string(nq) + "x" + std::to_string(nk));
      EspParams p;
      p.rankCoupling = coupling;
      EXPECT_GT(tiedTokens(expectMatchesCpu(tiedHead(nq, nk, 6, 3), p)), 0);
    }
}

// One tie group holds every query: its blocks pair all n_q queries with each key group.
TEST(SimEsp, ATieGroupOfTheWholeSequenceMatchesTheCpu) {
  AttentionInput<float> in = simHead(20, 13, 5, 4, false);
  for (Eigen::Index r = 1; r < in.Q.rows(); ++r) in.Q.row(r) = in.Q.row(0);
  EspParams p;
  EXPECT_GE(tiedTokens(expectMatchesCpu(in, p)), 20 * 5);
}

TEST(SimEsp, GeneralExponentRandomSlicesAndReferenceCodeScalingMatchTheCpu) {
  EspParams p;
  p.p = 3;
  p.tau = 2;
  p.slices.slicer = Slicer::Random;
  p.slices.L = 5;
  p.slices.seed = 11;
  expectMatchesCpu(tiedHead(17, 17, 7, 5), p);
  p.compat = EspCompat::ReferenceCode;
  expectMatchesCpu(tiedHead(17, 17, 7, 6), p);
}

TEST(SimEsp, PaddingBesideTiesMatchesTheCpu) {
  AttentionInput<float> in = tiedHead(26, 26, 8, 7);
  in.mask = Mask::Ones(26);
  for (int i = 2; i < 26; i += 5) (*in.mask)(i) = false;
  EspParams p;
  const PlanResult<float> dev = expectMatchesCpu(in, p);
  EXPECT_EQ(dev.extras.at(EspExtras::matchings)(0, 2), -1.f) << "a padded query has no match";
}

TEST(SimEsp, TheDensePlanIsFormedOnlyWhenAsked) {
  EspParams p;
  const AttentionInput<float> in = tiedHead(12, 12, 4, 8);
  EXPECT_TRUE(expectMatchesCpu(in, p, DeviceRequest{true}).plan.isDense());
  EXPECT_FALSE(expectMatchesCpu(in, p).plan.isDense());
}

}  // namespace
}  // namespace tl
