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

// Cold and warm trajectories (asap_inspection.h) on the tokens in use, with u0 = Φβ − a from the same fit
// features (ops/asap/asap_fit.h) on that sub-problem.
void addTrajectories(const AttentionInput<double>& input, const VecD& dual, AsapInspection& r) {
  if (input.mask && r.settings.teacher.maskMode == MaskMode::KeepQueries) return;
  const std::vector<Eigen::Index> tokens = tokensInUse(input);
  const MatD Q = takeRows(input.Q, tokens), K = takeRows(input.K, tokens);
  const double eps = r.settings.teacher.eps;
  const FitExample example =
      prepareFitExample({Q, K, takeRows(MatD(dual), tokens), std::nullopt}, r.slices, {eps, MaskMode::Subsequence});
  const DenseScores<double> X(Q, K, eps);
  const VecD zero = VecD::Zero(Q.rows());
  const int steps = AsapInspection::kTrajectorySteps;
  r.coldStartErrors = trajectory(X, zero, zero, true, steps);
  r.warmStartErrors = trajectory(X, predictedSourceDual(example, r.beta) / eps, zero, false, steps);
}

}  // namespace

double AsapInspection::planRatioBound() const { return std::exp(2.0 * quality.delta / settings.teacher.eps); }

AsapInspection inspectAsap(const AttentionInput<double>& input, const AsapInspectionSettings& settings) {
  checkSettings(input, settings);
  AsapInspection r;
  r.settings = settings;
  r.closing = settings.teacher.T % 2 == 0 ? Closing::Column : Closing::Row;
  const PlanResult<double> teacher = sinkhornAttention(input, settings.teacher);
  r.teacherPlan = teacher.plan.dense();
  r.teacherErrors = teacher.errors;
  // The closure-ready dual (docs/operators/asap.md#teacher-duals): u after step T − 1, which is the final u
  // of a column-ending teacher, or after step T − 2 (row-ending).
  SinkhornParams extraction = settings.teacher;
  extraction.T -= 2;
  const VecD dual = r.closing == Closing::Column ? teacher.u : sinkhornAttention(input, extraction).u;

  r.slices = sliceDirections({Slicer::Random, settings.L, settings.seed, {}}, input.headDim());
  const FitInstance instance{input.Q, input.K, dual, input.mask};
  const std::vector<FitExample> examples{
      prepareFitExample(instance, r.slices, {settings.teacher.eps, settings.teacher.maskMode})};
  LsAccumulator normalEquations(settings.L);
  normalEquations.add(examples.front());
  r.beta = solveLs(normalEquations, settings.lambdaB).beta;
  if (settings.fit == FitKind::Kl) r.beta = fitKl(examples, r.beta, settings.lambdaB).beta;
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
  addTrajectories(input, dual, r);
  return r;
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
