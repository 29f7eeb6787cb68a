// One calibration example of the ASAP fit (docs/operators/asap.md#fitting), and the fit's quality measures.
#include <cmath>
#include <limits>
#include <string>

#include "common/errors.h"
#include "ops/asap/asap_fit.h"
#include "ops/asap/feature_families.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

void checkInstance(const FitInstance& in, const MatD& slices) {
  const Eigen::Index n = in.Q.rows();
  if (n == 0 || in.K.rows() != n || in.K.cols() != in.Q.cols())
    throw InvalidArgument("asap fit: Q and K must both be n×d with n ≥ 1 (got " + std::to_string(in.Q.rows()) + "×" +
                          std::to_string(in.Q.cols()) + " and " + std::to_string(in.K.rows()) + "×" +
                          std::to_string(in.K.cols()) + ")");
  if (in.dual.size() != n)
    throw InvalidArgument("asap fit: the teacher dual has " + std::to_string(in.dual.size()) + " entries for n = " +
                          std::to_string(n) + " tokens");
  if (slices.cols() != in.Q.cols())
    throw InvalidArgument("asap fit: slices are L×" + std::to_string(slices.cols()) + " but the head dimension is " +
                          std::to_string(in.Q.cols()));
  if (in.mask && (in.mask->size() != n || !in.mask->any()))
    throw InvalidArgument("asap fit: the mask needs one entry per token and at least one valid token");
  if (!allEntriesFinite(in.Q) || !allEntriesFinite(in.K)) throw InvalidArgument("asap fit: Q and K must be finite");
}

}  // namespace

FitExample prepareFitExample(const FitInstance& instance, const MatD& slices, const FitSettings& settings) {
  checkInstance(instance, slices);
  const bool cut = instance.mask && settings.maskMode == MaskMode::Subsequence;
  const std::vector<Eigen::Index> valid = cut ? validIndices(*instance.mask) : std::vector<Eigen::Index>{};
  const MatD Q = cut ? takeRows(instance.Q, valid) : instance.Q;
  const MatD K = cut ? takeRows(instance.K, valid) : instance.K;
  const VecD dual = cut ? VecD(takeRows(MatD(instance.dual), valid)) : instance.dual;
  const std::optional<Mask> keyMask = cut ? std::nullopt : instance.mask;
  if (!dual.allFinite())
    throw InvalidArgument("asap fit: the teacher dual must be finite on the tokens in use (under keep-queries: on "
                          "every token)");
  const Eigen::Index n = Q.rows();
  const Mask lossRows = keyMask ? *keyMask : Mask(Mask::Ones(n));

  FitExample e{DenseScores<double>(Q, K, settings.eps), settings.eps, {}, {}, lossRows, {}, {}, {}, {}, {}};
  e.a = Q.rowwise().squaredNorm() / (2.0 * std::sqrt(double(Q.cols())));
  e.phi = sourceFeatures(Q, K, slices, keyMask, settings.features);

  // Target: cost-coordinate dual centred over the loss rows (docs/operators/asap.md#fitting).
  const VecD cost = dual + e.a;
  const double mean = lossRows.select(cost, 0.0).sum() / double(lossRows.count());
  e.target = lossRows.select(cost.array() - mean, 0.0);

  e.logNu = VecD::Constant(n, -std::log(double(n)));
  if (keyMask)
    for (Eigen::Index j = 0; j < n; ++j)
      if (!(*keyMask)(j)) e.logNu(j) = -std::numeric_limits<double>::infinity();
  // KL target: row sums of the one-sided teacher plan P(u, K(u)), transport scale (for a row-ending teacher
  // this is the (T − 1)-step plan, not the teacher: docs/operators/asap.md#kl).
  const VecD ut = dual / settings.eps;
  const VecD vt = e.logNu - e.X.colLogSumExp(ut);
  e.teacherRowMass = e.X.plan(ut, vt, 1.0).rowwise().sum();
  if (predictsBothDuals(settings.features)) {
    // The key dual of the same plan, in cost units, centred over the valid keys (the shift the source target
    // lost is the one constant P(f̂, ĝ) fixes by its total mass).
    e.keyPhi = keyPotentialFeatures(Q, K, slices, keyMask);
    const VecD keyCost = lossRows.select(settings.eps * vt + K.rowwise().squaredNorm() / (2.0 * std::sqrt(double(K.cols()))), 0.0);
    const double keyMean = keyCost.sum() / double(lossRows.count());
    e.keyTarget = lossRows.select(keyCost.array() - keyMean, 0.0);
  }
  return e;
}

VecD predictedSourceDual(const FitExample& example, const VecD& beta) { return example.phi * beta - example.a; }

namespace {

// R², δ and R̂ of features·β against the targets, over the loss rows.
FitQuality quality(const std::vector<FitExample>& examples, const VecD& beta, bool keySide) {
  double residual = 0, total = 0, delta = 0;
  Eigen::Index rows = 0;
  for (const FitExample& e : examples) {
    const MatD& features = keySide ? e.keyPhi : e.phi;
    const VecD& target = keySide ? e.keyTarget : e.target;
    const VecD error = e.lossRows.select(features * beta - target, 0.0);
    residual += error.squaredNorm();
    total += target.squaredNorm();
    delta = std::max(delta, error.cwiseAbs().maxCoeff());
    rows += e.lossRows.count();
  }
  FitQuality q;
  q.r2 = total > 0 ? 1.0 - residual / total : 0.0;
  q.delta = delta;
  q.residualMeanSquare = rows > 0 ? residual / double(rows) : 0.0;
  return q;
}

}  // namespace

FitQuality fitQuality(const std::vector<FitExample>& examples, const VecD& beta) {
  return quality(examples, beta, false);
}

FitQuality keyFitQuality(const std::vector<FitExample>& examples, const VecD& keyBeta) {
  return quality(examples, keyBeta, true);
}

}  // namespace tl
