// [CLS] maps and attention rollout: hand-checked values, reshape order, and clear errors on bad sizes.
#include "analysis/cls_maps.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::matricesNear;

// 1 [CLS] + a 2×3 grid: entry (i, j) = 10·i + j, so every value says where it came from.
MatD indexedAttention() {
  MatD a(7, 7);
  for (int i = 0; i < 7; ++i)
    for (int j = 0; j < 7; ++j) a(i, j) = 10 * i + j;
  return a;
}

TEST(ClsMaps, QueryMapIsRowZeroOverPatchesInRowMajorOrder) {
  const MatD map = clsQueryMap(indexedAttention(), {2, 3});
  EXPECT_TRUE(matricesNear(map, (MatD(2, 3) << 1, 2, 3, 4, 5, 6).finished(), 0.0));
}

TEST(ClsMaps, KeyMapIsColumnZeroOverPatches) {
  const MatD map = clsKeyMap(indexedAttention(), {2, 3});
  EXPECT_TRUE(matricesNear(map, (MatD(2, 3) << 10, 20, 30, 40, 50, 60).finished(), 0.0));
}

TEST(ClsMaps, SizeMismatchNamesBothShapes) {
  try {
    (void)clsQueryMap(indexedAttention(), {3, 3});
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("7×7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("10×10"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)clsKeyMap(indexedAttention(), {0, 6}), InvalidArgument);
}

// One layer, one head, residual 0.5: Â = (A + I)/2 already has unit rows when A does.
TEST(AttentionRollout, OneLayerIsTheResidualMix) {
  const MatD A = (MatD(2, 2) << 0.25, 0.75, 0.5, 0.5).finished();
  const MatD expected = (MatD(2, 2) << 0.625, 0.375, 0.25, 0.75).finished();
  EXPECT_TRUE(matricesNear(attentionRollout({{A}}, HeadFusion::Mean), expected, 1e-15));
}

// Two layers multiply later-on-the-left: R = Â_1 Â_0 (hand product).
TEST(AttentionRollout, LayersComposeInOrder) {
  const MatD A0 = (MatD(2, 2) << 0, 1, 1, 0).finished();
  const MatD A1 = (MatD(2, 2) << 1, 0, 1, 0).finished();
  // Â_0 = [[.5,.5],[.5,.5]], Â_1 = [[1,0],[.5,.5]] → R = Â_1 Â_0 = [[.5,.5],[.5,.5]].
  EXPECT_TRUE(matricesNear(attentionRollout({{A0}, {A1}}, HeadFusion::Mean), MatD::Constant(2, 2, 0.5), 1e-15));
  // Residual 0: plain product A_1 A_0 = [[0,1],[0,1]].
  EXPECT_TRUE(matricesNear(attentionRollout({{A0}, {A1}}, HeadFusion::Mean, 0.0),
                           (MatD(2, 2) << 0, 1, 0, 1).finished(), 0.0));
}

TEST(AttentionRollout, HeadFusionMeanMaxMinThenRowsRenormalised) {
  const MatD h1 = (MatD(2, 2) << 1, 0, 0, 1).finished();
  const MatD h2 = (MatD(2, 2) << 0, 1, 1, 0).finished();
  // residual 0 isolates the fusion: mean → 1/2 everywhere; max → all ones → rows 1/2; min → zero rows stay 0.
  EXPECT_TRUE(matricesNear(attentionRollout({{h1, h2}}, HeadFusion::Mean, 0.0), MatD::Constant(2, 2, 0.5), 1e-15));
  EXPECT_TRUE(matricesNear(attentionRollout({{h1, h2}}, HeadFusion::Max, 0.0), MatD::Constant(2, 2, 0.5), 1e-15));
  EXPECT_TRUE(matricesNear(attentionRollout({{h1, h2}}, HeadFusion::Min, 0.0), MatD::Zero(2, 2), 0.0));
}

TEST(AttentionRollout, IdentityAttentionRollsOutToIdentity) {
  const MatD I = MatD::Identity(5, 5);
  EXPECT_TRUE(matricesNear(attentionRollout({{I, I}, {I, I}, {I, I}}, HeadFusion::Max), I, 0.0));
}

TEST(AttentionRollout, RowStochasticLayersGiveRowStochasticRollout) {
  MatD A = test::gaussian(6, 6, 11).cwiseAbs();
  for (int i = 0; i < 6; ++i) A.row(i) /= A.row(i).sum();
  const MatD R = attentionRollout({{A, A.transpose()}, {A}}, HeadFusion::Max);
  EXPECT_TRUE(matricesNear(R.rowwise().sum(), VecD::Ones(6), 1e-14));
}

TEST(AttentionRollout, BadInputsAreRejected) {
  EXPECT_THROW((void)attentionRollout({}, HeadFusion::Mean), InvalidArgument);
  EXPECT_THROW((void)attentionRollout({{MatD::Identity(2, 2)}, {MatD::Identity(3, 3)}}, HeadFusion::Mean),
               InvalidArgument);
  EXPECT_THROW((void)attentionRollout({{MatD::Identity(2, 2)}}, HeadFusion::Mean, 1.5), InvalidArgument);
  EXPECT_EQ(parseHeadFusion("max"), HeadFusion::Max);
  EXPECT_THROW((void)parseHeadFusion("median"), InvalidArgument);
}

}  // namespace
}  // namespace tl
