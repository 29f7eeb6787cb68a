// The ASAP view's computation (ops/asap/asap_inspection.h) against the fitting code it wraps and the
// spec's identities: β, R² and δ equal fitLayer's on the same instance; δ is the largest dual error and
// R² the explained share; the ASAP-0 plan stays in the dual-stability band e^{±2δ/eps} around a column-ending
// teacher (B.8); Φ's column is the slice's centred 1-D potential, the matching is monotone, and φ is
// ½z² − f at the knots; the T_b baselines are Sinkhorn at that budget, and the trajectories start where the
// operators say (cold: Sinkhorn's own error history; warm: ASAP-0 after one step, two-sided ASAP after three).
#include "ops/asap/asap_inspection.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "ops/asap/asap.h"
#include "ops/asap/sliced_potentials.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/subsequence.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::throwsWith;

AttentionInput<double> randomInput(int n, int d, uint64_t seed) {
  AttentionInput<double> in;
  in.Q = gaussian(n, d, seed);
  in.K = gaussian(n, d, seed + 1);
  return in;
}

AsapInspectionSettings settings(int T, int L, double eps = 1.0) {
  AsapInspectionSettings s;
  s.teacher.T = T;
  s.teacher.eps = eps;
  s.L = L;
  s.seed = 7;
  s.lambdaB = 1e-4;
  return s;
}

TEST(AsapInspection, FitEqualsFitLayerOnTheSameInstance) {
  for (int T : {4, 5}) {
    const AttentionInput<double> in = randomInput(24, 8, 3);
    const AsapInspection r = inspectAsap(in, settings(T, 12, 0.7));
    SinkhornParams extraction = r.settings.teacher;
    if (T % 2 == 1) extraction.T -= 2;
    const FitInstance instance{in.Q, in.K, sinkhornAttention(in, extraction).u, std::nullopt};
    const LayerFit fit = fitLayer({instance}, r.slices, {0.7, MaskMode::Subsequence}, 1e-4, FitKind::Ls);
    EXPECT_LE((r.beta - fit.beta).cwiseAbs().maxCoeff(), 1e-12) << T;
    EXPECT_NEAR(r.quality.r2, fit.quality.r2, 1e-12) << T;
    EXPECT_NEAR(r.quality.delta, fit.quality.delta, 1e-12) << T;
    EXPECT_EQ(r.closing, T % 2 == 0 ? Closing::Column : Closing::Row);
  }
}

TEST(AsapInspection, DeltaAndR2DescribeTheDrawnDuals) {
  const AsapInspection r = inspectAsap(randomInput(32, 8, 11), settings(4, 16));
  ASSERT_EQ(r.fitted.size(), 32);
  ASSERT_EQ(r.phi.rows(), 32);
  ASSERT_EQ(r.phi.cols(), 16);
  EXPECT_NEAR((r.fitted - r.target).cwiseAbs().maxCoeff(), r.quality.delta, 1e-12);
  EXPECT_NEAR(1.0 - (r.fitted - r.target).squaredNorm() / r.target.squaredNorm(), r.quality.r2, 1e-12);
  EXPECT_LE((r.phi * r.beta - r.fitted).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_NEAR(r.target.sum(), 0.0, 1e-10);  // centred
  // More slices fit the single instance better (nested banks: the first rows are shared).
  const AsapInspection fewer = inspectAsap(randomInput(32, 8, 11), settings(4, 2));
  EXPECT_LE((fewer.slices - r.slices.topRows(2)).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_LT(fewer.quality.r2, r.quality.r2);
}

TEST(AsapInspection, Asap0PlanStaysInsideThePlanRatioBand) {
  // Column-ending teacher: its plan is ASAP-0 of the exact dual, so ASAP-0 of f̂ (off by ≤ δ) has
  // e^{−2δ/eps} ≤ P/P^T ≤ e^{2δ/eps} (docs/operators/asap.md#checks, dual stability).
  const AsapInspection r = inspectAsap(randomInput(20, 4, 5), settings(4, 6, 0.5));
  const double bound = r.planRatioBound();
  EXPECT_NEAR(bound, std::exp(2 * r.quality.delta / 0.5), 1e-12);
  const MatD ratio = r.asap0Plan.array() / r.teacherPlan.array();
  EXPECT_LE(ratio.maxCoeff(), bound * (1 + 1e-12));
  EXPECT_GE(ratio.minCoeff(), (1 - 1e-12) / bound);
  // The two-sided plan has the column-ending teacher's exact columns, and so has ASAP-0; the reported errors
  // are those of the drawn plans.
  EXPECT_LE((r.asapPlan.colwise().sum().array() - 1).abs().maxCoeff(), 1e-12);
  EXPECT_LE(r.asapErrors.colMax, 1e-12);
  EXPECT_LE(r.asap0Errors.colMax, 1e-12);
  EXPECT_NEAR(r.asap0Errors.rowMax, (r.asap0Plan.rowwise().sum().array() - 1).abs().maxCoeff(), 1e-12);
  EXPECT_NEAR(r.asapRelativeError, (r.asapPlan - r.teacherPlan).norm() / r.teacherPlan.norm(), 1e-12);
  EXPECT_NEAR(r.asap0RelativeError, (r.asap0Plan - r.teacherPlan).norm() / r.teacherPlan.norm(), 1e-12);
  EXPECT_GT(r.asap0RelativeError, 0.0);
}

TEST(AsapInspection, SliceInspectorIsTheFeatureColumnsOneDimensionalProblem) {
  const AttentionInput<double> in = randomInput(15, 6, 21);
  const AsapInspection r = inspectAsap(in, settings(4, 5));
  for (int l = 0; l < 5; ++l) {
    const SliceInspection s = inspectSlice(in, r, l);
    const VecD centred = s.potential.array() - s.potential.mean();
    EXPECT_LE((centred - r.phi.col(l)).cwiseAbs().maxCoeff(), 1e-12) << l;
    // Monotone matching: a larger x is matched to a key with no smaller y.
    for (Eigen::Index i = 0; i < s.x.size(); ++i)
      for (Eigen::Index k = 0; k < s.x.size(); ++k) {
        if (s.x(i) >= s.x(k)) continue;
        EXPECT_LE(s.y(s.matchedKey[size_t(i)]), s.y(s.matchedKey[size_t(k)])) << l;
      }
    // The curve is the convex extension: at the knots it is f, and φ = ½z² − f.
    const VecD atKnots = potentialExtension(s.x, s.y, s.x);
    EXPECT_LE((atKnots - s.potential).cwiseAbs().maxCoeff(), 1e-12) << l;
    EXPECT_LE((s.interpolant.array() - (0.5 * s.grid.array().square() - s.potentialCurve.array())).abs().maxCoeff(),
              1e-12);
  }
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)inspectSlice(in, r, 5); }, {"slice 5"}));
}

TEST(AsapInspection, MaskedInputUsesTheValidTokens) {
  AttentionInput<double> in = randomInput(10, 4, 9);
  Mask mask = Mask::Ones(10);
  mask(3) = mask(8) = false;
  in.mask = mask;
  const AsapInspection r = inspectAsap(in, settings(4, 4));
  EXPECT_EQ(r.fitted.size(), 8);
  EXPECT_EQ(r.teacherPlan.rows(), 10);
  EXPECT_EQ(r.asap0Plan.col(3).cwiseAbs().maxCoeff(), 0.0);
  EXPECT_EQ(inspectSlice(in, r, 0).x.size(), 8);
}

TEST(AsapInspection, RefusesWhatItCannotFit) {
  const AttentionInput<double> in = randomInput(6, 4, 1);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)inspectAsap(in, settings(1, 4)); }, {"T ≥ 2"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)inspectAsap(in, settings(4, 0)); }, {"slice"}));
  AttentionInput<double> cross = in;
  cross.K = gaussian(5, 4, 2);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)inspectAsap(cross, settings(4, 4)); }, {"self-attention"}));
}

double largestError(const MarginalErrors& e) { return std::max(e.rowMax, e.colMax); }

TEST(AsapInspection, ShortBudgetBaselinesAreSinkhornAtTb1And3) {
  const AttentionInput<double> in = randomInput(20, 8, 5);
  const AsapInspection r = inspectAsap(in, settings(4, 8, 0.6));
  for (int k = 0; k < 2; ++k) {
    SinkhornParams p = r.settings.teacher;
    p.T = 2 * k + 1;
    const MatD expected = sinkhornAttention(in, p).plan.dense();
    EXPECT_EQ((r.shortPlans[k] - expected).cwiseAbs().maxCoeff(), 0.0) << p.T;
    EXPECT_NEAR(r.shortRelativeErrors[k], (expected - r.teacherPlan).norm() / r.teacherPlan.norm(), 1e-12);
    EXPECT_LE(r.shortErrors[k].rowMax, 1e-12) << "row-ending budgets have exact rows";
  }
}

TEST(AsapInspection, TrajectoriesStartColdAtSinkhornAndWarmAtAsap) {
  const AttentionInput<double> in = randomInput(20, 8, 9);
  const AsapInspection r = inspectAsap(in, settings(4, 8, 0.6));
  const size_t steps = AsapInspection::kTrajectorySteps;
  ASSERT_EQ(r.coldStartErrors.size(), steps);
  ASSERT_EQ(r.warmStartErrors.size(), steps);
  // Cold: the teacher's loop itself, run for as many steps.
  SinkhornParams p = r.settings.teacher;
  p.T = int(steps);
  const PlanResult<double> sinkhorn = sinkhornAttention(in, p);
  ASSERT_EQ(sinkhorn.errorHistory.size(), steps);
  for (size_t t = 0; t < steps; ++t) EXPECT_NEAR(r.coldStartErrors[t], largestError(sinkhorn.errorHistory[t]), 1e-12) << t;
  // Warm: step 1 is ASAP-0 and step 3 two-sided ASAP (column closing) with the fitted β.
  EXPECT_NEAR(r.warmStartErrors[0], largestError(r.asap0Errors), 1e-12);
  EXPECT_NEAR(r.warmStartErrors[2], largestError(r.asapErrors), 1e-12);
  // A good warm start is ahead of the cold one after the teacher's budget.
  EXPECT_LT(r.warmStartErrors[3], r.coldStartErrors[3]);
}

TEST(AsapInspection, TrajectoriesRunOnTheValidTokensUnderSubsequencePadding) {
  AttentionInput<double> in = randomInput(18, 8, 13);
  in.mask = Mask::Ones(18);
  (*in.mask)(4) = (*in.mask)(11) = false;
  const AsapInspection padded = inspectAsap(in, settings(4, 8));
  const std::vector<Eigen::Index> valid = validIndices(*in.mask);
  const AttentionInput<double> cut{takeRows(in.Q, valid), takeRows(in.K, valid), std::nullopt, std::nullopt};
  const AsapInspection alone = inspectAsap(cut, settings(4, 8));
  ASSERT_EQ(padded.warmStartErrors.size(), alone.warmStartErrors.size());
  for (size_t t = 0; t < alone.warmStartErrors.size(); ++t) {
    EXPECT_NEAR(padded.warmStartErrors[t], alone.warmStartErrors[t], 1e-12) << t;
    EXPECT_NEAR(padded.coldStartErrors[t], alone.coldStartErrors[t], 1e-12) << t;
  }
  AsapInspectionSettings keep = settings(4, 8);
  keep.teacher.maskMode = MaskMode::KeepQueries;
  EXPECT_TRUE(inspectAsap(in, keep).warmStartErrors.empty());
}

TEST(AsapInspection, MarginalsAreThePlansSumsAndAsapRowsStayWithinTheB34Bound) {
  const AsapInspection r = inspectAsap(randomInput(40, 8, 21), settings(4, 8, 0.5));
  const PlanMarginals asap = planMarginals(r.asapPlan), teacher = planMarginals(r.teacherPlan);
  EXPECT_LE((asap.rows - r.asapPlan.rowwise().sum()).cwiseAbs().maxCoeff(), 1e-15);
  EXPECT_LE((teacher.cols.array() - 1).abs().maxCoeff(), 1e-12);  // column-ending teacher
  ASSERT_TRUE(r.rowBound.has_value());
  EXPECT_GT(r.rowBound->eta, 0);
  EXPECT_LE((asap.rows.array() - 1).abs().maxCoeff(), r.rowBound->eta + 1e-12);
  EXPECT_NEAR((asap.rows.array() - 1).abs().maxCoeff(), r.asapErrors.rowMax, 1e-12);
  EXPECT_FALSE(inspectAsap(randomInput(40, 8, 21), settings(5, 8)).rowBound.has_value()) << "row closing";
}

TEST(AsapInspection, SliceSweepRefitsWithTheFirstSlicesOfTheBank) {
  const AttentionInput<double> in = randomInput(48, 8, 5);
  const AsapInspection r = inspectAsap(in, settings(4, 12, 0.7));
  const SliceSweep s = sweepSlices(in, settings(4, 12, 0.7));
  ASSERT_EQ(s.slices, (std::vector<int>{1, 2, 4, 8, 12, 16, 32, 64, 128}));
  ASSERT_EQ(s.kl.size(), s.slices.size());
  // The sweep's fit at the view's own L is the view's fit.
  const size_t own = 4;
  EXPECT_NEAR(s.r2[own], r.quality.r2, 1e-12);
  EXPECT_NEAR(sweepSlices(in, settings(5, 12, 0.7)).r2[own], inspectAsap(in, settings(5, 12, 0.7)).quality.r2, 1e-12)
      << "a row-ending teacher: the dual after T − 2 steps, as the fit";
  EXPECT_NEAR(s.residualMeanSquare[own], r.quality.residualMeanSquare, 1e-12);
  for (size_t k = 0; k < s.slices.size(); ++k) {
    const OneSidedKl& kl = s.kl[k];
    EXPECT_GE(kl.forward, 0);
    EXPECT_LE(std::max(kl.forward, kl.reverse), kl.varianceBound) << s.slices[k];
    EXPECT_LE(kl.varianceBound, kl.kappaBound) << s.slices[k];
    EXPECT_LE(kl.kappaBound, s.lsSurrogate[k] * (1 + 1e-12)) << s.slices[k];
    // B.54 in cost units is κ/(2ε²)·R̂: ‖Π(u' − u)‖² (eps units) = n·R̂/ε².
    EXPECT_NEAR(kl.centredGapSquared, 48 * s.residualMeanSquare[k] / (0.7 * 0.7), 1e-9 * kl.centredGapSquared);
    EXPECT_NEAR(s.lsSurrogate[k], s.kappa / (2 * 0.7 * 0.7) * s.residualMeanSquare[k], 1e-12 * s.lsSurrogate[k]);
  }
}

TEST(AsapInspection, WithoutRidgeTheSweepsRiskFallsWithL) {
  AsapInspectionSettings s = settings(4, 16);
  s.lambdaB = 0;
  const SliceSweep sweep = sweepSlices(randomInput(40, 8, 9), s);
  // Nested features and no ridge: more slices can only lower the least-squares risk; counts beyond the rank of
  // the centred features (39) are left out.
  EXPECT_EQ(sweep.slices.back(), 32);
  for (size_t k = 1; k < sweep.slices.size(); ++k)
    EXPECT_LE(sweep.residualMeanSquare[k], sweep.residualMeanSquare[k - 1] * (1 + 1e-9)) << sweep.slices[k];
}

TEST(AsapInspection, KeepQueriesPaddingLeavesTheUniformMarginalDiagnosticsOut) {
  AttentionInput<double> in = randomInput(18, 8, 13);
  in.mask = Mask::Ones(18);
  (*in.mask)(4) = false;
  AsapInspectionSettings keep = settings(4, 8);
  keep.teacher.maskMode = MaskMode::KeepQueries;
  const AsapInspection r = inspectAsap(in, keep);
  EXPECT_FALSE(r.rowBound.has_value());
  EXPECT_TRUE(sweepSlices(in, keep).slices.empty());
}

}  // namespace
}  // namespace tl
