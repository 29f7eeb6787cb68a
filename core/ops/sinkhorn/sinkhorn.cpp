#include "ops/sinkhorn/sinkhorn.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "common/errors.h"
#include "ops/family.h"
#include "ops/dense_device.h"
#include "ops/log_domain.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn_cache.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

// One run on an input whose only possible mask is the keep-queries key mask.
template <class T>
PlanResult<T> sinkhornLogDomain(const AttentionInput<T>& in, const SinkhornParams& p,
                                const std::optional<Mask>& keyMask, Feedback& feedback, SinkhornCache<T>* cache) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  checkDenseSize(nq, nk, sizeof(T), "Sinkhorn");
  const T eps = T(p.eps);
  std::optional<DenseScores<T>> fresh;
  const DenseScores<T>& X = cache ? cache->scaledScores(in, p.eps) : fresh.emplace(in.Q, in.K, eps);

  const auto [logMu, logNu] = sinkhornLogMarginals<T>(nq, nk, keyMask);

  PlanResult<T> r;
  Vec<T> ut, vt;
  SinkhornLoopOptions options;
  options.budget = p.T;
  // Attention scale A = n_q·P: rows target 1, columns n_q·nu (1 when square and unpadded).
  const T scale = T(nq);
  runSinkhornLoop<T>(X, logMu, logNu, eps, scale, options, feedback, r, ut, vt, cache ? cache->resumeFrom(p.T) : nullptr);
  if (cache) cache->keep(ut, vt, r);
  // The cache keeps its scores for the next edit; a fresh run's score buffer becomes the plan (one n×n less). The
  // output A·V is formed with it, block by block.
  Mat<T> output;
  const PlanPassExtras<T> extras{nullptr, in.V ? &*in.V : nullptr, &output};
  r.plan = fresh ? std::move(*fresh).intoPlan(ut, vt, scale, extras) : X.plan(ut, vt, scale, extras);
  if (in.V) r.output = std::move(output);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

const ParamBindings<SinkhornParams>& sinkhornParamBindings() {
  static const ParamBindings<SinkhornParams> bindings = [] {
    ParamBindings<SinkhornParams> b;
    b.field(intParam("T", 1, 100000, 10,
                     "budget: single normalisations, rows first (T=1 is softmax; even T ends on columns)", 500),
            &SinkhornParams::T);
    b.field(positiveParam("eps", 1.0, "temperature dividing the scores: kernel exp(S/eps)"), &SinkhornParams::eps);
    bindMaskMode(b, true);
    return b;
  }();
  return bindings;
}

SinkhornParams::SinkhornParams() { sinkhornParamBindings().fillDefaults(*this); }

template <class T>
std::pair<Vec<T>, Vec<T>> sinkhornLogMarginals(Eigen::Index nq, Eigen::Index nk, const std::optional<Mask>& keyMask) {
  const Vec<T> logMu = Vec<T>::Constant(nq, -std::log(T(nq)));
  Vec<T> logNu = Vec<T>::Constant(nk, -std::log(T(nk)));
  if (keyMask)
    for (Eigen::Index j = 0; j < nk; ++j)
      if (!(*keyMask)(j)) logNu(j) = -std::numeric_limits<T>::infinity();
  return {logMu, logNu};
}

template std::pair<Vec<float>, Vec<float>> sinkhornLogMarginals(Eigen::Index, Eigen::Index, const std::optional<Mask>&);
template std::pair<Vec<double>, Vec<double>> sinkhornLogMarginals(Eigen::Index, Eigen::Index,
                                                                  const std::optional<Mask>&);
SinkhornParams SinkhornParams::from(const ParamSet& resolved) { return sinkhornParamBindings().fill(resolved); }

template <class T>
PlanResult<T> sinkhornAttention(const AttentionInput<T>& input, const SinkhornParams& params, Feedback& feedback,
                                SinkhornCache<T>* cache) {
  sinkhornParamBindings().check(params, "sinkhorn");
  validateInput(input);
  if (cache) cache->startRun(params.maskMode);
  if (params.maskMode == MaskMode::KeepQueries) return sinkhornLogDomain(input, params, input.mask, feedback, cache);
  return runOnValidSubsequence<T>(input, [&](const AttentionInput<T>& valid) {
    return sinkhornLogDomain(valid, params, std::nullopt, feedback, cache);
  });
}

template PlanResult<float> sinkhornAttention(const AttentionInput<float>&, const SinkhornParams&, Feedback&,
                                             SinkhornCache<float>*);
template PlanResult<double> sinkhornAttention(const AttentionInput<double>&, const SinkhornParams&, Feedback&,
                                              SinkhornCache<double>*);

void registerSinkhorn(OperatorRegistry& registry) {
  CudaPath<SinkhornParams> cuda;
  cuda.run = [](const AttentionBatch<float>& heads, const SinkhornParams& p, const DeviceRequest& request,
                const DenseKernels& kernels, Feedback& feedback) {
    sinkhornParamBindings().check(p, "sinkhorn");
    return runDenseOnDevice(heads, {p.T, p.eps, false, p.maskMode}, request, kernels, feedback);
  };
  registry.add(familyInfo<SinkhornParams>(
      {{"sinkhorn", "Sinkhorn", "log-domain Sinkhorn scaling of exp(QKᵀ/(√d·eps)) with a finite budget T"},
       sinkhornParamBindings(),
       {Backend::Torch},
       {},
       cuda},
      [](const auto& input, const SinkhornParams& p, Feedback& f) { return sinkhornAttention(input, p, f); }));
}

}  // namespace tl
