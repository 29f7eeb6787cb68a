// The ASAP view's computation on one input (asap_inspection.h).
#include "ops/asap/asap_inspection.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "analysis/plan_distance.h"
#include "common/argsort.h"
#include "common/errors.h"
#include "ops/asap/sliced_potentials.h"
#include "ops/score_geometry.h"
#include "ops/slicers.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

void checkSettings(const AttentionInput<double>& input, const AsapInspectionSettings& s) {
  if (s.teacher.T < 2)
    throw InvalidArgument("the ASAP fit needs a Sinkhorn teacher with T ≥ 2 (T = 1 is plain softmax: nothing to fit)");
  if (s.L < 1) throw InvalidArgument("the ASAP fit needs at least one slice (L ≥ 1)");
  if (!(s.lambdaB >= 0)) throw InvalidArgument("lambda_b must be ≥ 0");
  if (input.nQueries() != input.nKeys())
    throw InvalidArgument("the ASAP fit needs self-attention (as many queries as keys); this input has " +
                          std::to_string(input.nQueries()) + " queries and " + std::to_string(input.nKeys()) +
                          " keys");
}

// Positions of the tokens the fit uses: the valid ones, or all without a mask.
std::vector<Eigen::Index> tokensInUse(const AttentionInput<double>& input) {
  if (input.mask) return validIndices(*input.mask);
  std::vector<Eigen::Index> all(size_t(input.nQueries()));
  std::iota(all.begin(), all.end(), Eigen::Index(0));
  return all;
}

PlanResult<double> asapPlan(const AttentionInput<double>& input, const AsapInspection& r, AsapVariant variant) {
  AsapParams p;
  p.variant = variant;
  p.closing = r.closing;
  p.eps = r.settings.teacher.eps;
  p.maskMode = r.settings.teacher.maskMode;
  p.slices = r.slices;
  p.beta = r.beta;
  return asapAttention(input, p);
}

// Largest row or column error of the attention-scale plan n·exp(X + ut ⊕ vt) against targets 1.
double largestMarginalError(const DenseScores<double>& X, const VecD& ut, const VecD& vt) {
  const MatD A = X.plan(ut, vt, double(X.rows()));
  const double rows = (A.rowwise().sum().array() - 1).abs().maxCoeff();
  const double cols = (A.colwise().sum().transpose().array() - 1).abs().maxCoeff();
  return std::max(rows, cols);
}

// Alternating closures on the square problem X with uniform marginals, from (ut, vt), the first one on rows or
// on columns; the error after each.
std::vector<double> trajectory(const DenseScores<double>& X, VecD ut, VecD vt, bool rowsFirst, int steps) {
  const double logMarginal = -std::log(double(X.rows()));
  std::vector<double> errors;
  for (int t = 0; t < steps; ++t) {
    if ((t % 2 == 0) == rowsFirst)
      ut = (logMarginal - X.rowLogSumExp(vt).array()).matrix();
    else
      vt = (logMarginal - X.colLogSumExp(ut).array()).matrix();
    errors.push_back(largestMarginalError(X, ut, vt));
  }
  return errors;
}

// β for the settings' fit kind on one example: LS, and KL started from it.
VecD fitBeta(const FitExample& example, const AsapInspectionSettings& settings) {
  LsAccumulator normalEquations(example.phi.cols());
  normalEquations.add(example);
  const VecD ls = solveLs(normalEquations, settings.lambdaB).beta;
  return settings.fit == FitKind::Kl ? fitKl({example}, ls, settings.lambdaB).beta : ls;
}

// The example with only its first L feature columns: the fit with the first L slices of the nested bank.
FitExample withFirstSlices(const FitExample& example, int L) {
  FitExample e = example;
  e.phi = example.phi.leftCols(L);
  return e;
}

// The sweep's slice counts: powers of two up to the largest, and the fit's own L. Without a ridge, only counts
// the centred features (rank ≤ tokens − 1) can determine.
std::vector<int> sweepSliceCounts(const AsapInspectionSettings& settings, Eigen::Index tokens) {
  std::vector<int> counts{settings.L};
  for (int L = 1; L <= kSweepMaxSlices; L *= 2) counts.push_back(L);
  std::sort(counts.begin(), counts.end());
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  if (settings.lambdaB == 0)
    counts.erase(std::remove_if(counts.begin(), counts.end(), [tokens](int L) { return L > tokens - 1; }),
                 counts.end());
  return counts;
}

SliceSweep sweepOnTokensInUse(const FitExample& bankExample, const VecD& teacherDual,
                              const AsapInspectionSettings& settings) {
  const double eps = settings.teacher.eps;
  SliceSweep sweep;
  sweep.slices = sweepSliceCounts(settings, bankExample.phi.rows());
  for (int L : sweep.slices) {
    const FitExample example = withFirstSlices(bankExample, L);
    const VecD beta = fitBeta(example, settings);
    const FitQuality quality = fitQuality({example}, beta);
    sweep.r2.push_back(quality.r2);
    sweep.residualMeanSquare.push_back(quality.residualMeanSquare);
    sweep.kl.push_back(oneSidedKl(example.X, teacherDual / eps, predictedSourceDual(example, beta) / eps));
    sweep.kappa = std::max(sweep.kappa, sweep.kl.back().kappa);
  }
  for (double risk : sweep.residualMeanSquare) sweep.lsSurrogate.push_back(sweep.kappa / (2 * eps * eps) * risk);
  return sweep;
}

// The closure-ready dual (docs/operators/asap.md#teacher-duals): u after step T − 1, which is the final u of a
// column-ending teacher, or after step T − 2 (row-ending).
VecD closureReadyDual(const AttentionInput<double>& input, const SinkhornParams& teacher) {
  SinkhornParams extraction = teacher;
  if (teacher.T % 2 == 1) extraction.T -= 2;
  return sinkhornAttention(input, extraction).u;
}

// The diagnostics that assume uniform marginals run on the tokens in use as a problem of their own (under
// keep-queries padding the marginals are not uniform, and they are left out). Its fit example, with the
// features of the first `slices` directions of the bank, and the teacher's dual on those tokens.
struct TokenProblem {
  FitExample example;
  VecD teacherDual;
};
TokenProblem tokenProblem(const AttentionInput<double>& input, const VecD& dual,
                          const AsapInspectionSettings& settings, int slices) {
  const std::vector<Eigen::Index> tokens = tokensInUse(input);
  const VecD teacherDual = takeRows(MatD(dual), tokens);
  const MatD bank = sliceDirections({Slicer::Random, slices, settings.seed, {}}, input.headDim());
  return {prepareFitExample({takeRows(input.Q, tokens), takeRows(input.K, tokens), teacherDual, std::nullopt}, bank,
                            {settings.teacher.eps, MaskMode::Subsequence}),
          teacherDual};
}

bool uniformMarginals(const AttentionInput<double>& input, const AsapInspectionSettings& settings) {
  return !(input.mask && settings.teacher.maskMode == MaskMode::KeepQueries);
}

// The cold and warm trajectories (asap_inspection.h) and the B.34 row bound.
void addTokenDiagnostics(const AttentionInput<double>& input, const VecD& dual, AsapInspection& r) {
  if (!uniformMarginals(input, r.settings)) return;
  const TokenProblem problem = tokenProblem(input, dual, r.settings, r.settings.L);
  const DenseScores<double>& X = problem.example.X;
  const VecD u0 = predictedSourceDual(problem.example, r.beta) / r.settings.teacher.eps;

  const VecD zero = VecD::Zero(X.rows());
  const int steps = AsapInspection::kTrajectorySteps;
  r.coldStartErrors = trajectory(X, zero, zero, true, steps);
  r.warmStartErrors = trajectory(X, u0, zero, false, steps);
  if (r.closing == Closing::Column) r.rowBound = twoSidedRowBound(X, u0);
}

}  // namespace

PlanMarginals planMarginals(const MatD& plan) {
  return {plan.rowwise().sum(), plan.colwise().sum().transpose()};
}

double AsapInspection::planRatioBound() const { return std::exp(2.0 * quality.delta / settings.teacher.eps); }

AsapInspection inspectAsap(const AttentionInput<double>& input, const AsapInspectionSettings& settings) {
  checkSettings(input, settings);
  AsapInspection r;
  r.settings = settings;
  r.closing = settings.teacher.T % 2 == 0 ? Closing::Column : Closing::Row;
  const PlanResult<double> teacher = sinkhornAttention(input, settings.teacher);
  r.teacherPlan = teacher.plan.dense();
  r.teacherErrors = teacher.errors;
  const VecD dual = r.closing == Closing::Column ? teacher.u : closureReadyDual(input, settings.teacher);

  r.slices = sliceDirections({Slicer::Random, settings.L, settings.seed, {}}, input.headDim());
  const FitInstance instance{input.Q, input.K, dual, input.mask};
  const std::vector<FitExample> examples{
      prepareFitExample(instance, r.slices, {settings.teacher.eps, settings.teacher.maskMode})};
  r.beta = fitBeta(examples.front(), settings);
  r.quality = fitQuality(examples, r.beta);

  const FitExample& e = examples.front();
  const VecD fitted = e.phi * r.beta;
  std::vector<Eigen::Index> rows;
  for (Eigen::Index i = 0; i < e.lossRows.size(); ++i)
    if (e.lossRows(i)) rows.push_back(i);
  r.fitted = takeRows(MatD(fitted), rows);
  r.target = takeRows(MatD(e.target), rows);
  r.phi = takeRows(e.phi, rows);

  const PlanResult<double> asap = asapPlan(input, r, AsapVariant::TwoSided);
  const PlanResult<double> asap0 = asapPlan(input, r, AsapVariant::Asap0);
  r.asapPlan = asap.plan.dense();
  r.asap0Plan = asap0.plan.dense();
  r.asapErrors = asap.errors;
  r.asap0Errors = asap0.errors;
  r.asapRelativeError = relativeFrobenius(r.asapPlan, r.teacherPlan);
  r.asap0RelativeError = relativeFrobenius(r.asap0Plan, r.teacherPlan);
  for (int k = 0; k < 2; ++k) {
    SinkhornParams shortBudget = settings.teacher;
    shortBudget.T = 2 * k + 1;
    const PlanResult<double> baseline = sinkhornAttention(input, shortBudget);
    r.shortPlans[k] = baseline.plan.dense();
    r.shortErrors[k] = baseline.errors;
    r.shortRelativeErrors[k] = relativeFrobenius(r.shortPlans[k], r.teacherPlan);
  }
  addTokenDiagnostics(input, dual, r);
  return r;
}

SliceSweep sweepSlices(const AttentionInput<double>& input, const AsapInspectionSettings& settings) {
  checkSettings(input, settings);
  if (!uniformMarginals(input, settings)) return {};
  // One bank of the largest size: its first L rows are the L-slice bank (slicers.h), so one set of features
  // serves every fit.
  const int largest = std::max(kSweepMaxSlices, settings.L);
  const TokenProblem problem = tokenProblem(input, closureReadyDual(input, settings.teacher), settings, largest);
  return sweepOnTokensInUse(problem.example, problem.teacherDual, settings);
}

SliceInspection inspectSlice(const AttentionInput<double>& input, const AsapInspection& inspection, int slice) {
  if (slice < 0 || slice >= inspection.slices.rows())
    throw InvalidArgument("slice " + std::to_string(slice) + " is not one of the " +
                          std::to_string(inspection.slices.rows()) + " slices");
  const std::vector<Eigen::Index> tokens = tokensInUse(input);
  const VecD theta = inspection.slices.row(slice).transpose();
  const double scale = 1.0 / std::pow(double(input.headDim()), 0.25);  // as in slicedFeatures
  SliceInspection s;
  s.x = takeRows(MatD(input.Q * theta * scale), tokens);
  s.y = takeRows(MatD(input.K * theta * scale), tokens);
  s.potential = potential1D(s.x, s.y).f;

  // Equal ranks match (stable order, as potential1D sorts).
  ArgsortWorkspace<double> sortWorkspace;
  std::vector<Eigen::Index> byX, byY;
  stableArgsort(s.x.data(), size_t(s.x.size()), byX, sortWorkspace);
  stableArgsort(s.y.data(), size_t(s.y.size()), byY, sortWorkspace);
  s.matchedKey.assign(byX.size(), 0);
  for (size_t r = 0; r < byX.size(); ++r) s.matchedKey[size_t(byX[r])] = byY[r];

  constexpr int kGridPoints = 400;
  const double lo = std::min(s.x.minCoeff(), s.y.minCoeff()), hi = std::max(s.x.maxCoeff(), s.y.maxCoeff());
  const double margin = 0.1 * std::max(hi - lo, 1e-9);
  s.grid = VecD::LinSpaced(kGridPoints, lo - margin, hi + margin);
  s.potentialCurve = potentialExtension(s.x, s.y, s.grid);
  s.interpolant = 0.5 * s.grid.array().square() - s.potentialCurve.array();
  return s;
}

}  // namespace tl
