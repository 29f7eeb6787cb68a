#include "ops/asap/asap.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "io/npy.h"
#include "ops/asap/sliced_potentials.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/registry.h"
#include "ops/score_geometry.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

// Predicted source dual u0 in score coordinates (docs/operators/asap.md#closures): Φβ − a, or the given dual.
template <class T>
Vec<T> predictedSourceDual(const AttentionInput<T>& in, const AsapParams& p, const std::optional<Mask>& keyMask,
                           PlanResult<T>& r) {
  if (p.dual) {
    if (p.dual->size() != in.Q.rows())
      throw InvalidArgument("asap: dual has " + std::to_string(p.dual->size()) + " entries but there are " +
                            std::to_string(in.Q.rows()) + " queries");
    // Checked here, on the tokens in use: a subsequence teacher's u.npy is -inf on padded tokens.
    if (!p.dual->allFinite()) throw InvalidArgument("asap: dual has non-finite entries on valid tokens");
    return p.dual->template cast<T>();
  }
  if (p.slices->cols() != in.Q.cols())
    throw InvalidArgument("asap: slices must be L×d with d = " + std::to_string(in.Q.cols()) + " (the head dimension); got " +
                          std::to_string(p.slices->rows()) + "×" + std::to_string(p.slices->cols()));
  const MatD phi = slicedFeatures(in.Q.template cast<double>(), in.K.template cast<double>(), *p.slices, keyMask);
  const VecD a = in.Q.template cast<double>().rowwise().squaredNorm() / (2.0 * std::sqrt(double(in.Q.cols())));
  r.extras["asap_features"] = phi.template cast<T>();
  return (phi * (*p.beta) - a).template cast<T>();
}

template <class T>
PlanResult<T> asapDense(const AttentionInput<T>& in, const AsapParams& p, const std::optional<Mask>& keyMask) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  checkDenseSize(nq, nk, sizeof(T), "ASAP");
  const T eps = T(p.eps);
  const T negInf = -std::numeric_limits<T>::infinity();
  const DenseScores<T> X(in.Q, in.K, eps);

  // Marginals as the Sinkhorn teacher's (docs/operators/asap.md#masks): mu = 1/n_q everywhere, nu = 1/n_k on
  // active keys, else 0.
  const Vec<T> logMu = Vec<T>::Constant(nq, -std::log(T(nq)));
  Vec<T> logNu = Vec<T>::Constant(nk, -std::log(T(nk)));
  if (keyMask)
    for (Eigen::Index j = 0; j < nk; ++j)
      if (!(*keyMask)(j)) logNu(j) = negInf;

  PlanResult<T> r;
  const Vec<T> u0 = predictedSourceDual(in, p, keyMask, r);
  r.extras["asap_u"] = u0;
  // Potentials in eps units; each closure is one log-sum-exp pass (docs/operators/asap.md#definition).
  auto keyClosure = [&](const Vec<T>& ut) -> Vec<T> { return logNu - X.colLogSumExp(ut); };
  auto sourceClosure = [&](const Vec<T>& vt) -> Vec<T> { return logMu - X.rowLogSumExp(vt); };

  Vec<T> ut = u0 / eps;
  Vec<T> vt = keyClosure(ut);
  if (p.variant == AsapVariant::TwoSided) {
    ut = sourceClosure(vt);
    if (p.closing == Closing::Column) vt = keyClosure(ut);
  }
  r.u = eps * ut;
  r.v = eps * vt;
  r.plan = X.plan(ut, vt, T(nq));
  if (in.V) r.output = r.plan * (*in.V);

  r.rowTarget = (exactExp(logMu.array()) * T(nq)).matrix();
  r.colTarget = (exactExp(logNu.array()) * T(nq)).matrix();
  r.massMismatch = std::abs(r.rowTarget.sum() - r.colTarget.sum()) > 1e-6 * double(nq);
  r.errors = marginalErrorsFromSums<T>(r.plan.rowwise().sum(), r.rowTarget, r.plan.colwise().sum().transpose(),
                                       r.colTarget);
  r.errorHistory = {r.errors};
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

AsapVariant parseVariant(const std::string& s) { return s == "asap0" ? AsapVariant::Asap0 : AsapVariant::TwoSided; }
Closing parseClosing(const std::string& s) { return s == "row" ? Closing::Row : Closing::Column; }

}  // namespace

AsapParams AsapParams::from(const ParamSet& params) {
  AsapParams p;
  p.variant = parseVariant(getString(params, "variant"));
  p.closing = parseClosing(getString(params, "closing"));
  p.eps = getReal(params, "eps");
  p.maskMode = parseMaskMode(getString(params, "mask_mode"));
  if (p.variant == AsapVariant::Asap0 && p.closing == Closing::Row)
    throw InvalidArgument("asap: variant=asap0 always ends on the key side (exact columns); use variant=two-sided "
                          "for closing=row");
  const auto slices = getOptionalString(params, "slices"), beta = getOptionalString(params, "beta"),
             dual = getOptionalString(params, "dual");
  if (dual) {
    if (slices || beta) throw InvalidArgument("asap: give either dual=PATH.npy or slices=PATH.npy with beta=PATH.npy, not both");
    p.dual = readNpyMatrix<double>(*dual).reshaped();
    return p;
  }
  if (!slices || !beta)
    throw InvalidArgument("asap needs a compiled layer (slices=PATH.npy, L×d, and beta=PATH.npy, length L) or a "
                          "source dual (dual=PATH.npy, score coordinates, e.g. u.npy from `tlens plan`)");
  p.slices = readNpyMatrix<double>(*slices);
  p.beta = readNpyMatrix<double>(*beta).reshaped();
  if (p.beta->size() != p.slices->rows())
    throw InvalidArgument("asap: beta has " + std::to_string(p.beta->size()) + " entries but slices has L = " +
                          std::to_string(p.slices->rows()) + " rows; beta needs one coefficient per slice");
  if (!p.slices->allFinite() || !p.beta->allFinite()) throw InvalidArgument("asap: slices and beta must be finite");
  return p;
}

template <class T>
PlanResult<T> asapAttention(const AttentionInput<T>& input, const AsapParams& params, Feedback&) {
  if (!(params.eps > 0) || !std::isfinite(params.eps))
    throw InvalidArgument("asap: eps = " + std::to_string(params.eps) + " is not valid; expected eps > 0");
  validateInput(input);
  if (params.maskMode == MaskMode::KeepQueries) return asapDense(input, params, input.mask);
  if (params.dual && input.mask && !input.mask->all()) {
    // A full-length dual is cut down to the valid tokens together with Q and K.
    AsapParams onValid = params;
    VecD valid(input.mask->count());
    for (Eigen::Index i = 0, k = 0; i < input.mask->size(); ++i)
      if ((*input.mask)(i)) valid(k++) = (*params.dual)(i);
    onValid.dual = valid;
    return runOnValidSubsequence<T>(input, [&](const AttentionInput<T>& v) { return asapDense(v, onValid, std::nullopt); });
  }
  return runOnValidSubsequence<T>(input, [&](const AttentionInput<T>& v) { return asapDense(v, params, std::nullopt); });
}

template PlanResult<float> asapAttention(const AttentionInput<float>&, const AsapParams&, Feedback&);
template PlanResult<double> asapAttention(const AttentionInput<double>&, const AsapParams&, Feedback&);

namespace {
class AsapOperator : public TypedOperator<AsapOperator> {
 public:
  explicit AsapOperator(const ParamSet& params) : TypedOperator("asap", params), params_(AsapParams::from(params)) {}
  template <class T>
  PlanResult<T> compute(const AttentionInput<T>& input, Feedback& feedback) const {
    return asapAttention(input, params_, feedback);
  }

 private:
  AsapParams params_;
};

}  // namespace

void registerAsap(OperatorRegistry& registry) {
  registry.add({"asap", "ASAP",
                "compiled Sinkhorn layer: sliced-potential dual prediction + entropic c-transforms (needs slices+beta "
                "files, or a dual)",
                ParamSchema({choiceParam("variant", {"two-sided", "asap0"},
                                         "two-sided = three closures (col, row, col); asap0 = one key-side closure"),
                             choiceParam("closing", {"column", "row"}, "side of the last closure of two-sided ASAP"),
                             positiveParam("eps", 1.0, "temperature dividing the scores (the teacher's eps)"),
                             pathParam("slices", "slice bank Θ of the compiled layer (.npy, L×d)"),
                             pathParam("beta", "coefficients β of the compiled layer (.npy, length L)"),
                             pathParam("dual", "source dual u in score coordinates (.npy, length n) instead of slices+beta"),
                             maskModeSpec(true)}),
                [](const ParamSet& p) { return std::make_unique<AsapOperator>(p); }});
}

}  // namespace tl
