// ASAP fitting (docs/operators/asap.md#fitting) against the checks of docs/operators/asap.md#checks: the LS
// closed form against a direct stacked solve and the normalised-risk optimality (ridge over pooled rows),
// the KL gradient and Hessian against finite differences, λ_min(∇²J) ≥ λ_B, moment matching at the KL
// optimum (plans recomputed by the operator itself), exact recovery when the features span the teacher
// dual, and masks.
#include "ops/asap/asap_fit.h"

#include <gtest/gtest.h>

#include <Eigen/Eigenvalues>
#include <Eigen/QR>

#include "common/errors.h"
#include "ops/asap/asap.h"
#include "ops/asap/sliced_potentials.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/slicers.h"
#include "ops/asap/teacher_instance.h"
#include "support/test_util.h"

namespace tl {
namespace {

using test::gaussian;
using test::matricesNear;
using test::near;
using test::teacherInstance;
using test::throwsWith;

MatD sliceBank(int L, int d, uint64_t seed) { return sliceDirections({Slicer::Random, L, seed, {}}, d); }

std::vector<FitExample> examplesOf(const std::vector<FitInstance>& instances, const MatD& slices,
                                   const FitSettings& settings) {
  std::vector<FitExample> examples;
  for (const auto& instance : instances) examples.push_back(prepareFitExample(instance, slices, settings));
  return examples;
}

std::vector<FitInstance> calibrationSet(int N, int n, int d, double eps, uint64_t seed) {
  std::vector<FitInstance> set;
  for (int m = 0; m < N; ++m) set.push_back(teacherInstance(n, d, seed + 10 * uint64_t(m), eps));
  return set;
}

LsFit fitLs(const std::vector<FitExample>& examples, double lambdaB) {
  LsAccumulator acc(examples.front().phi.cols());
  for (const auto& e : examples) acc.add(e);
  return solveLs(acc, lambdaB);
}

// The ridge solve on the stacked rows [Φ; √λ I] β = [f̄; 0], by Householder QR: no normal equations.
VecD directStackedSolve(const std::vector<FitExample>& examples, double lambda) {
  const Eigen::Index L = examples.front().phi.cols();
  Eigen::Index rows = L;
  for (const auto& e : examples) rows += e.phi.rows();
  MatD A = MatD::Zero(rows, L);
  VecD y = VecD::Zero(rows);
  Eigen::Index r = 0;
  for (const auto& e : examples) {
    A.middleRows(r, e.phi.rows()) = e.phi;
    y.segment(r, e.phi.rows()) = e.target;
    r += e.phi.rows();
  }
  A.bottomRows(L) = std::sqrt(lambda) * MatD::Identity(L, L);
  return A.householderQr().solve(y);
}

TEST(AsapFit, LsMatchesTheDirectStackedSolveWithTheRidgeOverPooledRows) {
  const FitSettings settings{0.7, MaskMode::Subsequence};
  const auto examples = examplesOf(calibrationSet(6, 17, 8, settings.eps, 3), sliceBank(12, 8, 5), settings);
  for (double lambdaB : {1e-4, 1e-2}) {
    const LsFit fit = fitLs(examples, lambdaB);
    EXPECT_EQ(fit.rows, 6 * 17);
    EXPECT_DOUBLE_EQ(fit.lambda, 6 * 17 * lambdaB);
    EXPECT_EQ(fit.solver, "cholesky");
    const VecD direct = directStackedSolve(examples, fit.lambda);
    EXPECT_LE((fit.beta - direct).norm(), 1e-10 * direct.norm());
    // Minimiser of the normalised risk R̂(β) + λ_B‖β‖²: its gradient vanishes.
    VecD gradient = 2 * lambdaB * fit.beta;
    for (const auto& e : examples) gradient += 2.0 / double(fit.rows) * e.phi.transpose() * (e.phi * fit.beta - e.target);
    EXPECT_LE(gradient.norm(), 1e-12 * std::max(1.0, fit.beta.norm()));
  }
}

TEST(AsapFit, RidgeCountsEveryHeadInstanceAsRows) {
  // Pooling H heads gives H·N·n rows: the ridge grows with them (the implementation λ is n_rows·λ_B).
  const FitSettings settings;
  const auto slices = sliceBank(8, 4, 9);
  const auto one = examplesOf(calibrationSet(2, 9, 4, 1.0, 40), slices, settings);
  auto doubled = one;
  doubled.insert(doubled.end(), one.begin(), one.end());
  const LsFit a = fitLs(one, 1e-2), b = fitLs(doubled, 1e-2);
  EXPECT_DOUBLE_EQ(b.lambda, 2 * a.lambda);
  // Duplicating every row leaves the normalised risk, hence β, unchanged.
  EXPECT_TRUE(matricesNear(a.beta, b.beta, 1e-12));
}

TEST(AsapFit, LambdaZeroUsesQrAndRefusesRankDeficientFeatures) {
  const FitSettings settings;
  const auto examples = examplesOf(calibrationSet(4, 17, 8, 1.0, 70), sliceBank(10, 8, 2), settings);
  const LsFit fit = fitLs(examples, 0.0);
  EXPECT_EQ(fit.solver, "qr");
  LsAccumulator acc(10);
  for (const auto& e : examples) acc.add(e);
  const double residual = ((acc.gram()) * fit.beta - acc.moment()).norm();
  EXPECT_LE(residual, 1e-12 * (acc.gram().norm() * fit.beta.norm() + acc.moment().norm()));
  // n = 1: Φ = 0, nothing to fit without a ridge.
  const auto single = examplesOf({teacherInstance(1, 8, 1, 1.0, 2)}, sliceBank(3, 8, 1), settings);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)fitLs(single, 0.0); }, {"rank", "lambda_b"}));
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)fitLs(single, -1.0); }, {"lambda_b"}));
}

// Teacher duals inside the span of the features: u = Φβ* − a + c for a gauge constant c.
std::vector<FitInstance> spannedInstances(const MatD& slices, const VecD& betaStar, int N, int n, uint64_t seed) {
  std::vector<FitInstance> set;
  for (int m = 0; m < N; ++m) {
    FitInstance in{gaussian(n, int(slices.cols()), seed + uint64_t(m)), gaussian(n, int(slices.cols()), seed + 50 + uint64_t(m)), {}, {}};
    const MatD phi = slicedFeatures(in.Q, in.K, slices, std::nullopt);
    const VecD a = in.Q.rowwise().squaredNorm() / (2.0 * std::sqrt(double(in.Q.cols())));
    in.dual = (phi * betaStar - a).array() + 3.7 * (m + 1);
    set.push_back(in);
  }
  return set;
}

TEST(AsapFit, RecoversTheTeacherDualWhenTheFeaturesSpanIt) {
  const auto slices = sliceBank(6, 8, 11);
  const VecD betaStar = gaussian(6, 1, 12);
  const FitSettings settings{0.5, MaskMode::Subsequence};
  const auto instances = spannedInstances(slices, betaStar, 5, 17, 100);
  const auto examples = examplesOf(instances, slices, settings);
  const LsFit fit = fitLs(examples, 0.0);
  EXPECT_LE((fit.beta - betaStar).norm(), 1e-9 * betaStar.norm());
  const FitQuality q = fitQuality(examples, fit.beta);
  EXPECT_TRUE(near(q.r2, 1.0, 1e-12));
  EXPECT_LE(q.delta, 1e-9);
  // ASAP-0 with the fitted layer reproduces the teacher's plan P(u, K(u)).
  AttentionInput<double> in{instances[0].Q, instances[0].K, std::nullopt, std::nullopt};
  AsapParams compiled;
  compiled.variant = AsapVariant::Asap0;
  compiled.eps = settings.eps;
  compiled.slices = slices;
  compiled.beta = fit.beta;
  AsapParams teacher = compiled;
  teacher.slices.reset();
  teacher.beta.reset();
  teacher.dual = instances[0].dual;
  EXPECT_TRUE(matricesNear(asapAttention(in, compiled).plan.dense(), asapAttention(in, teacher).plan.dense(), 1e-9));
  // The KL data term vanishes there too, so KL with a tiny ridge stays at β*.
  const KlValue at = klObjective(examples, betaStar, 0.0, false);
  EXPECT_LE(at.gradient.norm(), 1e-12);
  const KlFit kl = fitKl(examples, fit.beta, 1e-12);
  EXPECT_TRUE(kl.converged);
  EXPECT_LE((kl.beta - betaStar).norm(), 1e-6 * betaStar.norm());
}

TEST(AsapFit, KlGradientAndHessianMatchFiniteDifferences) {
  for (double eps : {0.3, 1.0}) {
    SCOPED_TRACE(eps);
    const FitSettings settings{eps, MaskMode::Subsequence};
    const auto examples = examplesOf(calibrationSet(3, 17, 8, eps, 200), sliceBank(5, 8, 3), settings);
    const double lambdaB = 1e-3;
    const VecD beta = 0.3 * gaussian(5, 1, 4);
    const KlValue at = klObjective(examples, beta, lambdaB, true);
    const double h = 1e-5;
    for (Eigen::Index l = 0; l < beta.size(); ++l) {
      VecD plus = beta, minus = beta;
      plus(l) += h;
      minus(l) -= h;
      const KlValue p = klObjective(examples, plus, lambdaB, false), m = klObjective(examples, minus, lambdaB, false);
      const double fd = (p.objective - m.objective) / (2 * h);
      EXPECT_LE(std::abs(fd - at.gradient(l)), 1e-6 * std::max(1.0, std::abs(at.gradient(l)))) << "l=" << l;
      const VecD fdColumn = (p.gradient - m.gradient) / (2 * h);
      EXPECT_LE((fdColumn - at.hessian.col(l)).norm(), 1e-6 * std::max(1.0, at.hessian.col(l).norm())) << "l=" << l;
    }
    // Strong convexity: λ_min(∇²J) ≥ λ_B (∇²J includes the ridge).
    const Eigen::SelfAdjointEigenSolver<MatD> eig(at.hessian);
    EXPECT_GE(eig.eigenvalues().minCoeff(), lambdaB - 1e-12);
  }
}

TEST(AsapFit, KlOptimumMatchesRowMomentsOfTheOperatorsOwnPlan) {
  const double eps = 0.8, lambdaB = 1e-4;
  const FitSettings settings{eps, MaskMode::Subsequence};
  const auto slices = sliceBank(8, 8, 21);
  const auto instances = calibrationSet(4, 17, 8, eps, 300);
  const auto examples = examplesOf(instances, slices, settings);
  const LsFit ls = fitLs(examples, lambdaB);
  const KlFit kl = fitKl(examples, ls.beta, lambdaB);
  ASSERT_TRUE(kl.converged) << kl.gradientNorm;
  EXPECT_EQ(kl.method, "newton");
  EXPECT_LT(kl.gradientNorm, kKlGradientTolerance);
  // (1/N) Σ Φᵀ(r − P_β 1) = λ_B β, with P_β from `asap:variant=asap0` and r from the teacher's own plan.
  VecD moment = VecD::Zero(8);
  for (const auto& instance : instances) {
    AttentionInput<double> in{instance.Q, instance.K, std::nullopt, std::nullopt};
    AsapParams compiled;
    compiled.variant = AsapVariant::Asap0;
    compiled.eps = eps;
    compiled.slices = slices;
    compiled.beta = kl.beta;
    AsapParams teacher = compiled;
    teacher.slices.reset();
    teacher.beta.reset();
    teacher.dual = instance.dual;
    const MatD phi = slicedFeatures(instance.Q, instance.K, slices, std::nullopt);
    const double n = double(instance.Q.rows());  // attention → transport scale
    const VecD r = asapAttention(in, teacher).plan.rowSums() / n;
    const VecD p = asapAttention(in, compiled).plan.rowSums() / n;
    moment += phi.transpose() * (r - p) / double(instances.size());
  }
  EXPECT_LE((moment - lambdaB * kl.beta).norm(), 1e-8);
  // The KL fit is no worse than LS on its own objective.
  EXPECT_LE(kl.objective, klObjective(examples, ls.beta, lambdaB, false).objective);
}

// The L-BFGS fallback (run from the LS start with no Newton step) meets the same stopping rule and lands on
// Newton's β: J is strongly convex, so ‖β − β*‖ ≤ ‖∇J(β)‖/λ_min(∇²J) for each of them.
TEST(AsapFit, KlLbfgsFallbackReachesNewtonsOptimum) {
  const double eps = 0.8, lambdaB = 1e-3;
  const FitSettings settings{eps, MaskMode::Subsequence};
  const auto examples = examplesOf(calibrationSet(4, 17, 8, eps, 300), sliceBank(8, 8, 21), settings);
  const VecD start = fitLs(examples, lambdaB).beta;
  const KlFit newton = fitKl(examples, start, lambdaB);
  const KlFit lbfgs = fitKl(examples, start, lambdaB, noFeedback(), kKlGradientTolerance, 0);
  ASSERT_EQ(newton.method, "newton");
  EXPECT_EQ(lbfgs.method, "newton+lbfgs");
  ASSERT_TRUE(lbfgs.converged);
  EXPECT_LT(lbfgs.gradientNorm, 1e-8);
  EXPECT_GT(lbfgs.iterations, 0);
  const KlValue at = klObjective(examples, newton.beta, lambdaB, true);
  const double lambdaMin = Eigen::SelfAdjointEigenSolver<MatD>(at.hessian).eigenvalues().minCoeff();
  EXPECT_LE((lbfgs.beta - newton.beta).norm(), 2 * (lbfgs.gradientNorm + newton.gradientNorm) / lambdaMin);
  EXPECT_NEAR(lbfgs.objective, newton.objective, 1e-12 * std::max(1.0, std::abs(newton.objective)));
}

TEST(AsapFit, KlNeedsARidge) {
  const FitSettings settings;
  const auto examples = examplesOf(calibrationSet(1, 5, 4, 1.0, 1), sliceBank(3, 4, 1), settings);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)fitKl(examples, VecD::Zero(3), 0.0); }, {"lambda_b"}));
}

TEST(AsapFit, SubsequenceMasksFitTheValidTokensAlone) {
  const Mask mask = test::makeMask({true, false, true, true, true, false, true, true, true, true, true, false, true});
  const auto slices = sliceBank(5, 6, 31);
  const FitSettings settings{1.0, MaskMode::Subsequence};
  const FitInstance padded = teacherInstance(13, 6, 500, 1.0, 4, mask);
  EXPECT_TRUE(std::isinf(padded.dual(1)));  // the teacher's u is −inf on padding
  std::vector<int> valid;
  for (int i = 0; i < 13; ++i)
    if (mask(i)) valid.push_back(i);
  const FitInstance cut{test::selectRows(padded.Q, valid), test::selectRows(padded.K, valid),
                        VecD(test::selectRows(MatD(padded.dual), valid)), std::nullopt};
  const auto a = examplesOf({padded}, slices, settings), b = examplesOf({cut}, slices, settings);
  EXPECT_TRUE(matricesNear(fitLs(a, 1e-3).beta, fitLs(b, 1e-3).beta, 1e-14));
  EXPECT_TRUE(near(klObjective(a, VecD::Ones(5), 1e-3, false).objective,
                   klObjective(b, VecD::Ones(5), 1e-3, false).objective, 1e-14));
}

TEST(AsapFit, KeepQueriesUsesValidKeysAndExcludesPaddedRowsFromLs) {
  const Mask mask = test::makeMask({true, true, true, false, true, true, true, true, false, false, true, true});
  const auto slices = sliceBank(4, 6, 41);
  const double eps = 0.6, lambdaB = 1e-3;
  const FitSettings settings{eps, MaskMode::KeepQueries};
  const FitInstance instance = teacherInstance(12, 6, 600, eps, 6, mask, MaskMode::KeepQueries);
  ASSERT_TRUE(instance.dual.allFinite());  // every query row is kept
  const auto examples = examplesOf({instance}, slices, settings);
  EXPECT_EQ(examples[0].lossRows.count(), 9);
  // r sums to |J|/n: padded keys carry no mass.
  EXPECT_TRUE(near(examples[0].teacherRowMass.sum(), 9.0 / 12.0, 1e-14));
  // The masked Hessian is finite and matches finite differences of the gradient.
  const VecD beta = 0.2 * gaussian(4, 1, 2);
  const KlValue at = klObjective(examples, beta, lambdaB, true);
  ASSERT_TRUE(at.hessian.allFinite());
  const double h = 1e-5;
  for (Eigen::Index l = 0; l < 4; ++l) {
    VecD plus = beta, minus = beta;
    plus(l) += h;
    minus(l) -= h;
    const VecD fd = (klObjective(examples, plus, lambdaB, false).gradient -
                     klObjective(examples, minus, lambdaB, false).gradient) / (2 * h);
    EXPECT_LE((fd - at.hessian.col(l)).norm(), 1e-6 * std::max(1.0, at.hessian.col(l).norm()));
  }
  // The LS fit ignores the padded rows' targets.
  FitInstance moved = instance;
  moved.dual(3) += 5.0;
  moved.dual(8) -= 2.0;
  EXPECT_TRUE(matricesNear(fitLs(examples, lambdaB).beta, fitLs(examplesOf({moved}, slices, settings), lambdaB).beta, 1e-14));
  const KlFit kl = fitKl(examples, fitLs(examples, lambdaB).beta, lambdaB);
  EXPECT_TRUE(kl.converged);
}

TEST(AsapFit, QualityMeasuresTheFitOnTheLossRows) {
  const FitSettings settings;
  const auto examples = examplesOf(calibrationSet(3, 17, 8, 1.0, 800), sliceBank(16, 8, 8), settings);
  const LsFit fit = fitLs(examples, 1e-4);
  const FitQuality q = fitQuality(examples, fit.beta);
  double residual = 0, total = 0, delta = 0;
  for (const auto& e : examples) {
    const VecD fitted = predictedSourceDual(e, fit.beta) + e.a;  // Φβ
    residual += (fitted - e.target).squaredNorm();
    total += e.target.squaredNorm();
    delta = std::max(delta, (fitted - e.target).cwiseAbs().maxCoeff());
  }
  EXPECT_TRUE(near(q.r2, 1 - residual / total, 1e-12));
  EXPECT_TRUE(near(q.delta, delta, 1e-12));
  EXPECT_GT(q.r2, 0.0);
  EXPECT_LT(q.r2, 1.0);
  // β = 0 predicts nothing: R² = 0.
  EXPECT_TRUE(near(fitQuality(examples, VecD::Zero(16)).r2, 0.0, 1e-15));
}

TEST(AsapFit, BadInstancesAreRefusedWithTheirReason) {
  const auto slices = sliceBank(3, 4, 1);
  FitInstance in = teacherInstance(5, 4, 1, 1.0);
  in.dual = VecD::Zero(4);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)prepareFitExample(in, slices, {}); }, {"dual", "5"}));
  in = teacherInstance(5, 4, 1, 1.0);
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)prepareFitExample(in, sliceBank(3, 6, 1), {}); }, {"slices", "head dimension"}));
  in.dual(2) = std::nan("");
  EXPECT_TRUE(throwsWith<InvalidArgument>([&] { (void)prepareFitExample(in, slices, {}); }, {"finite"}));
}

}  // namespace
}  // namespace tl
