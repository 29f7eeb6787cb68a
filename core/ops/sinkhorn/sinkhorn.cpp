#include "ops/sinkhorn/sinkhorn.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "ops/log_domain.h"
#include "ops/registry.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

// One run on an input whose only possible mask is the keep-queries key mask.
template <class T>
PlanResult<T> sinkhornLogDomain(const AttentionInput<T>& in, const SinkhornParams& p,
                                const std::optional<Mask>& keyMask, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  checkDenseSize(nq, nk, sizeof(T), "Sinkhorn");
  const T eps = T(p.eps);
  const DenseScores<T> X(in.Q, in.K, eps);

  // Marginals (docs/operators/sinkhorn.md#definition): mu_i = 1/n_q; nu_j = 1/n_k, or 0 on padded keys
  // (keep-queries, docs/conventions.md#masks).
  const Vec<T> logMu = Vec<T>::Constant(nq, -std::log(T(nq)));
  Vec<T> logNu = Vec<T>::Constant(nk, -std::log(T(nk)));
  if (keyMask)
    for (Eigen::Index j = 0; j < nk; ++j)
      if (!(*keyMask)(j)) logNu(j) = -std::numeric_limits<T>::infinity();

  PlanResult<T> r;
  Vec<T> ut, vt;
  SinkhornLoopOptions options;
  options.budget = p.T;
  // Attention scale A = n_q·P: rows target 1, columns n_q·nu (1 when square and unpadded).
  const T scale = T(nq);
  runSinkhornLoop<T>(X, logMu, logNu, eps, scale, options, feedback, r, ut, vt);
  r.plan = X.plan(ut, vt, scale);
  if (in.V) r.output = r.plan * (*in.V);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

SinkhornParams SinkhornParams::from(const ParamSet& params) {
  SinkhornParams p;
  p.T = int(getInt(params, "T"));
  p.eps = getReal(params, "eps");
  p.maskMode = parseMaskMode(getString(params, "mask_mode"));
  return p;
}

template <class T>
PlanResult<T> sinkhornAttention(const AttentionInput<T>& input, const SinkhornParams& params, Feedback& feedback) {
  if (params.T < 1) throw InvalidArgument("sinkhorn: T = " + std::to_string(params.T) + " is not valid; expected T >= 1");
  if (!(params.eps > 0) || !std::isfinite(params.eps))
    throw InvalidArgument("sinkhorn: eps = " + std::to_string(params.eps) + " is not valid; expected eps > 0");
  validateInput(input);
  if (params.maskMode == MaskMode::KeepQueries) return sinkhornLogDomain(input, params, input.mask, feedback);
  return runOnValidSubsequence<T>(input, [&](const AttentionInput<T>& valid) {
    return sinkhornLogDomain(valid, params, std::nullopt, feedback);
  });
}

template PlanResult<float> sinkhornAttention(const AttentionInput<float>&, const SinkhornParams&, Feedback&);
template PlanResult<double> sinkhornAttention(const AttentionInput<double>&, const SinkhornParams&, Feedback&);

namespace {
class SinkhornOperator : public TypedOperator<SinkhornOperator> {
 public:
  explicit SinkhornOperator(const ParamSet& params)
      : TypedOperator("sinkhorn", params), params_(SinkhornParams::from(params)) {}
  template <class T>
  PlanResult<T> compute(const AttentionInput<T>& input, Feedback& feedback) const {
    return sinkhornAttention(input, params_, feedback);
  }

 private:
  SinkhornParams params_;
};
}  // namespace

void registerSinkhorn(OperatorRegistry& registry) {
  registry.add({"sinkhorn", "Sinkhorn", "log-domain Sinkhorn scaling of exp(QKᵀ/(√d·eps)) with a finite budget T",
                ParamSchema({intParam("T", 1, 100000, 10,
                                      "budget: single normalisations, rows first (T=1 is softmax; even T ends on "
                                      "columns)",
                                      500),
                             positiveParam("eps", 1.0, "temperature dividing the scores: kernel exp(S/eps)"),
                             maskModeSpec(true)}),
                [](const ParamSet& p) { return std::make_unique<SinkhornOperator>(p); }});
}

}  // namespace tl
