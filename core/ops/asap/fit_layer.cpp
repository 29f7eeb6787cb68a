// One layer's fit from its calibration instances (docs/operators/asap.md#fitting).
#include <chrono>
#include <string>

#include "common/errors.h"
#include "ops/asap/asap.h"
#include "ops/asap/asap_fit.h"

namespace tl {

FitKind parseFitKind(const std::string& text) {
  if (text == "ls") return FitKind::Ls;
  if (text == "kl") return FitKind::Kl;
  throw InvalidArgument("fit = '" + text + "' is not valid; expected ls or kl");
}

const char* fitKindName(FitKind kind) { return kind == FitKind::Kl ? "kl" : "ls"; }

LayerFit fitLayer(const std::vector<FitInstance>& instances, const MatD& slices, const FitSettings& settings,
                  double lambdaB, FitKind kind, Feedback& feedback, double klGradientTolerance) {
  if (instances.empty()) throw InvalidArgument("asap fit: the calibration set is empty");
  if (slices.rows() == 0) throw InvalidArgument("asap fit: the slice bank is empty (L = 0)");
  if (kind == FitKind::Kl && predictsBothDuals(settings.features))
    throw InvalidArgument("asap fit: fit=kl is not defined for features=predict-both (the KL surrogate is the "
                          "key-closed plan P(Φβ, (Φβ)^c), which predict-both never forms); use fit=ls");
  const auto start = std::chrono::steady_clock::now();
  std::vector<FitExample> examples;
  LsAccumulator normalEquations(slices.rows()), keyNormalEquations(slices.rows());
  for (size_t m = 0; m < instances.size(); ++m) {
    feedback.throwIfCanceled();
    feedback.setProgress(double(m) / double(instances.size()),
                         "features " + std::to_string(m + 1) + "/" + std::to_string(instances.size()));
    examples.push_back(prepareFitExample(instances[m], slices, settings));
    normalEquations.add(examples.back());
    if (predictsBothDuals(settings.features))
      keyNormalEquations.add(examples.back().keyPhi, examples.back().keyTarget, examples.back().lossRows);
  }
  LayerFit fit;
  fit.kind = kind;
  fit.ls = solveLs(normalEquations, lambdaB);
  fit.beta = fit.ls.beta;
  if (kind == FitKind::Kl) {
    fit.kl = fitKl(examples, fit.ls.beta, lambdaB, feedback, klGradientTolerance);
    fit.beta = fit.kl->beta;
  }
  fit.quality = fitQuality(examples, fit.beta);
  if (predictsBothDuals(settings.features)) {
    fit.keyLs = solveLs(keyNormalEquations, lambdaB);
    fit.keyBeta = fit.keyLs->beta;
    fit.keyQuality = keyFitQuality(examples, fit.keyBeta);
  }
  fit.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return fit;
}

FitSetErrors fitSetErrors(const std::vector<FitInstance>& instances, const MatD& slices, const VecD& beta,
                          const FitSettings& settings, bool rowEndingTeacher, const VecD& keyBeta) {
  auto params = [&](AsapVariant variant, Closing closing) {
    AsapParams p;
    p.variant = variant;
    p.closing = closing;
    p.eps = settings.eps;
    p.maskMode = settings.maskMode;
    return p;
  };
  const Closing closing = rowEndingTeacher ? Closing::Row : Closing::Column;
  AsapParams teacher = params(rowEndingTeacher ? AsapVariant::TwoSided : AsapVariant::Asap0, closing);
  FitSetErrors sum;
  for (const FitInstance& instance : instances) {
    const AttentionInput<double> input{instance.Q, instance.K, std::nullopt, instance.mask};
    teacher.dual = instance.dual;
    const MatD reference = asapAttention(input, teacher).plan.dense();
    auto error = [&](AsapVariant variant, const VecD& coefficients, AsapFeatures features) {
      AsapParams p = params(variant, variant == AsapVariant::Asap0 ? Closing::Column : closing);
      p.slices = slices;
      p.beta = coefficients;
      p.features = features;
      if (predictsBothDuals(features)) p.keyBeta = keyBeta;
      return (asapAttention(input, p).plan.dense() - reference).norm() / reference.norm();
    };
    const VecD zero = VecD::Zero(beta.size());
    if (predictsBothDuals(settings.features)) {
      const double both = error(AsapVariant::TwoSided, beta, settings.features);
      sum.asap0 += both;
      sum.asap += both;
    } else {
      sum.asap0 += error(AsapVariant::Asap0, beta, settings.features);
      sum.asap += error(AsapVariant::TwoSided, beta, settings.features);
    }
    sum.baselineAsap0 += error(AsapVariant::Asap0, zero, AsapFeatures::Potentials);
    sum.baselineAsap += error(AsapVariant::TwoSided, zero, AsapFeatures::Potentials);
  }
  const double N = double(instances.size());
  return {sum.asap0 / N, sum.asap / N, sum.baselineAsap0 / N, sum.baselineAsap / N};
}

}  // namespace tl
