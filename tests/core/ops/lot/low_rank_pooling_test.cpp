// LOT's display tiles from its factors (LotCoupling::pooled, low_rank_plan.h) against the default pooling of the
// same plan's dense matrix (ops/transport_plan.h): block means agree to round-off (a sum of products regrouped),
// block maxima to the last bits (each entry is the same r products, which Eigen's kernels for a tile of blocks and
// for a whole row block may add in another order: one ulp was seen).
#include <gtest/gtest.h>

#include <string>

#include "ops/lot/lot.h"
#include "support/test_util.h"

namespace tl {
namespace {

void expectPoolsLikeItsDenseMatrix(int nq, int nk, int maxRows, int maxCols, uint64_t seed) {
  AttentionInput<double> in;
  in.Q = test::gaussian(nq, 8, seed);
  in.K = test::gaussian(nk, 8, seed + 1);
  LotParams p;
  p.r = 5;
  p.T = 4;
  const Plan<double> plan = lotAttention(in, p).plan;
  ASSERT_STREQ(plan.kind(), "low-rank");
  const PooledPlan<double> tiles = plan.pooled(maxRows, maxCols);
  const PooledPlan<double> dense = DensePlan<double>(plan.dense()).pooled(maxRows, maxCols);
  const std::string label = std::to_string(nq) + " × " + std::to_string(nk) + " on " + std::to_string(maxRows) +
                            " × " + std::to_string(maxCols);
  EXPECT_EQ(tiles.rowStarts, dense.rowStarts) << label;
  EXPECT_EQ(tiles.colStarts, dense.colStarts) << label;
  ASSERT_EQ(tiles.mean.rows(), dense.mean.rows()) << label;
  ASSERT_EQ(tiles.mean.cols(), dense.mean.cols()) << label;
  EXPECT_TRUE(test::matricesNear(tiles.mean, dense.mean, 1e-13 * dense.mean.maxCoeff())) << label;
  EXPECT_TRUE(test::matricesNear(tiles.max, dense.max, 1e-14 * dense.max.maxCoeff())) << label;
}

TEST(LowRankPooling, BlockMeansAndMaximaFromTheFactorsEqualThoseOfTheDenseMatrix) {
  expectPoolsLikeItsDenseMatrix(150, 150, 7, 11, 1);    // uneven blocks of 21–22 × 13–14 entries
  expectPoolsLikeItsDenseMatrix(90, 131, 16, 16, 5);    // a rectangle
  expectPoolsLikeItsDenseMatrix(300, 300, 64, 64, 9);   // blocks of 4–5 entries a side, many per thread
  expectPoolsLikeItsDenseMatrix(20, 30, 64, 64, 13);    // a grid finer than the plan: one entry per block
  expectPoolsLikeItsDenseMatrix(600, 9000, 64, 64, 17);  // maxima formed in tiles of several row and column runs
}

}  // namespace
}  // namespace tl
