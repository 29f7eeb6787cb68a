#include "ops/asap/asap.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <utility>

#include "common/errors.h"
#include "io/npy_cache.h"
#include "ops/asap/asap_device.h"
#include "ops/asap/asap_steps.h"
#include "ops/asap/compiled_asap.h"
#include "ops/asap/feature_families.h"
#include "ops/family.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

template <class T>
T logSumExpOf(const Vec<T>& w) {
  const T top = w.maxCoeff();
  if (!std::isfinite(top)) return top;
  T sum = 0;
  for (Eigen::Index i = 0; i < w.size(); ++i) sum += std::exp(w(i) - top);  // scalar: n terms, once per plan
  return top + std::log(sum);
}

// predict-both's key dual in score coordinates: v0 = Ψβ_g − b (b_j = ‖k_j‖²/(2√d)), −inf on padded keys.
template <class T>
Vec<T> asapKeyDual(const AttentionInput<T>& in, const AsapParams& p, const std::optional<Mask>& keyMask,
                   PlanResult<T>& r) {
  const MatD K = in.K.template cast<double>();
  const MatD psi = keyPotentialFeatures(in.Q.template cast<double>(), K, *p.slices, keyMask);
  const VecD b = K.rowwise().squaredNorm() / (2.0 * std::sqrt(double(in.K.cols())));
  r.extras["asap_key_features"] = psi.template cast<T>();
  Vec<T> v0 = (psi * (*p.keyBeta) - b).template cast<T>();
  if (keyMask)
    for (Eigen::Index j = 0; j < v0.size(); ++j)
      if (!(*keyMask)(j)) v0(j) = -std::numeric_limits<T>::infinity();
  return v0;
}

// The dense CPU path: the scores once, the closures by the same kernels as Sinkhorn's half-steps (the row
// closure and the column log-sum-exp after it in one pass), then the plan in the scores' buffer. The reported
// marginal errors cost no pass of their own: the plan's row sums come from the pass that forms it, its column sums
// from the log-sum-exp over the final u.
template <class T>
PlanResult<T> asapDense(const AttentionInput<T>& in, const AsapParams& p, const std::optional<Mask>& keyMask) {
  using sinkhorn_loop::closure;
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  checkDenseSize(nq, nk, sizeof(T), "ASAP");
  const T eps = T(p.eps), scale = T(nq);
  DenseScores<T> X(in.Q, in.K, eps);

  // Marginals as the Sinkhorn teacher's (docs/operators/asap.md#masks): mu = 1/n_q everywhere, nu = 1/n_k on
  // active keys, else 0.
  const std::pair<Vec<T>, Vec<T>> marginals = sinkhornLogMarginals<T>(nq, nk, keyMask);
  const Vec<T>& logMu = marginals.first;
  const Vec<T>& logNu = marginals.second;
  PlanResult<T> r;
  setMarginalTargets(logMu, logNu, scale, r);

  const Vec<T> u0 = asapSourceDual(in, p, keyMask, r);
  r.extras["asap_u"] = u0;
  // Potentials in eps units; each closure is one log-sum-exp pass (docs/operators/asap.md#definition).
  Vec<T> ut = u0 / eps, vt;
  Vec<T> colLse = X.colLogSumExp(ut);  // log Σ_i exp(X_ij + ut_i), kept current with ut
  if (predictsBothDuals(p.features)) {
    // P(f̂, ĝ), no closure: one constant so that the total mass is Σν (centring dropped it from f̂ + ĝ).
    vt = asapKeyDual(in, p, keyMask, r) / eps;
    vt.array() += logSumExpOf<T>(logNu) - logSumExpOf<T>(Vec<T>(colLse + vt));
  } else {
    vt = closure(logNu, colLse);
    if (p.variant == AsapVariant::TwoSided) {
      RowClosurePass<T> rowClosure = X.rowClosurePass(vt, logMu);  // one pass: the closure and the next LSE
      ut = closure(logMu, rowClosure.rowLse);
      colLse = std::move(rowClosure.colLse);
      if (p.closing == Closing::Column) vt = closure(logNu, colLse);
    }
  }
  r.u = eps * ut;
  r.v = eps * vt;
  Vec<T> rowSums;
  Mat<T> output;
  r.plan = std::move(X).intoPlan(ut, vt, scale, {&rowSums, in.V ? &*in.V : nullptr, &output});
  if (in.V) r.output = std::move(output);
  r.errors = marginalErrorsFromSums<T>(rowSums, r.rowTarget, sinkhorn_loop::marginalSums(vt, colLse, scale),
                                       r.colTarget);
  r.errorHistory = {r.errors};
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

template <class T>
Vec<T> asapSourceDual(const AttentionInput<T>& in, const AsapParams& p, const std::optional<Mask>& keyMask,
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
  const MatD Q = in.Q.template cast<double>();
  const MatD phi = sourceFeatures(Q, in.K.template cast<double>(), *p.slices, keyMask, p.features);
  const VecD a = Q.rowwise().squaredNorm() / (2.0 * std::sqrt(double(Q.cols())));
  r.extras["asap_features"] = phi.template cast<T>();
  return (phi * (*p.beta) - a).template cast<T>();
}

AsapParams asapParamsOnValid(const AsapParams& params, const Mask& mask) {
  if (!params.dual) return params;
  AsapParams onValid = params;
  VecD valid(mask.count());
  for (Eigen::Index i = 0, k = 0; i < mask.size(); ++i)
    if (mask(i)) valid(k++) = (*params.dual)(i);
  onValid.dual = valid;
  return onValid;
}

AsapVariant parseAsapVariant(const std::string& text) {
  if (text == "two-sided") return AsapVariant::TwoSided;
  if (text == "asap0") return AsapVariant::Asap0;
  throw InvalidArgument("asap: variant = '" + text + "' is not valid; expected two-sided or asap0");
}
const char* asapVariantName(AsapVariant variant) { return variant == AsapVariant::Asap0 ? "asap0" : "two-sided"; }

Closing parseClosing(const std::string& text) {
  if (text == "column") return Closing::Column;
  if (text == "row") return Closing::Row;
  throw InvalidArgument("asap: closing = '" + text + "' is not valid; expected column or row");
}
const char* closingName(Closing closing) { return closing == Closing::Row ? "row" : "column"; }

int asapClosures(AsapVariant variant, Closing closing) {
  if (variant == AsapVariant::Asap0) return 1;
  return closing == Closing::Row ? 2 : 3;
}

const ParamBindings<AsapParams>& asapParamBindings() {
  static const ParamBindings<AsapParams> bindings = [] {
    auto vector = [](const ParamValue& path) -> VecD { return readNpyMatrixCached(std::get<std::string>(path)).reshaped(); };
    ParamBindings<AsapParams> b;
    b.parsed(choiceParam("variant", {"two-sided", "asap0"},
                         "two-sided = three closures (col, row, col); asap0 = one key-side closure"),
             &AsapParams::variant, parseAsapVariant, asapVariantName);
    b.parsed(choiceParam("closing", {"column", "row"}, "side of the last closure of two-sided ASAP"),
             &AsapParams::closing, parseClosing, closingName);
    b.field(positiveParam("eps", 1.0, "temperature dividing the scores (the teacher's eps)"), &AsapParams::eps);
    b.custom(pathParam("slices", "slice bank Θ of the compiled layer (.npy, L×d)"),
             [](AsapParams& p, const ParamValue& path) { p.slices = readNpyMatrixCached(std::get<std::string>(path)); });
    b.custom(pathParam("beta", "coefficients β of the compiled layer (.npy, length L)"),
             [vector](AsapParams& p, const ParamValue& path) { p.beta = vector(path); });
    b.parsed(choiceParam("features", {"potentials", "raw", "rank-displacement", "predict-both"},
                         "feature family of slices+beta (a compiled model records its own): sliced potentials, raw "
                         "projections, rank displacement, or predict both duals with no closure (needs key_beta)"),
             &AsapParams::features, parseAsapFeatures, asapFeaturesName);
    b.custom(pathParam("key_beta", "coefficients β_g of the key dual for features=predict-both (.npy, length L)"),
             [vector](AsapParams& p, const ParamValue& path) { p.keyBeta = vector(path); });
    b.custom(pathParam("dual", "source dual u in score coordinates (.npy, length n) instead of slices+beta"),
             [vector](AsapParams& p, const ParamValue& path) { p.dual = vector(path); });
    b.custom(pathParam("compiled", "a compiled model's folder (tlens asap-compile) instead of slices+beta"),
             [](AsapParams& p, const ParamValue& path) { p.compiled = std::get<std::string>(path); });
    b.field(intParam("layer", -1, 1000, -1, "layer of the compiled model (-1: the layer it is swapped into)"),
            &AsapParams::layer);
    bindMaskMode(b, true);
    return b;
  }();
  return bindings;
}

AsapParams::AsapParams() { asapParamBindings().fillDefaults(*this); }

AsapParams AsapParams::from(const ParamSet& resolved) {
  AsapParams p = asapParamBindings().fill(resolved);
  if (p.variant == AsapVariant::Asap0 && p.closing == Closing::Row)
    throw InvalidArgument("asap: variant=asap0 always ends on the key side (exact columns); use variant=two-sided "
                          "for closing=row");
  if (p.variant == AsapVariant::Asap0 && predictsBothDuals(p.features))
    throw InvalidArgument("asap: features=predict-both forms P(f̂, ĝ) with no closure; variant=asap0 does not apply");
  if (p.compiled) {
    if (p.dual || p.slices || p.beta || p.keyBeta)
      throw InvalidArgument("asap: give compiled=DIR alone, without dual, slices, beta or key_beta");
    if (p.layer < 0)
      throw InvalidArgument("asap: compiled=DIR needs layer=<index> outside a model (inside one, the layer it "
                            "replaces is used)");
    const CompiledAsap compiled = loadCompiledAsapCached(*p.compiled);
    if (compiled.eps != p.eps)
      throw InvalidArgument("asap: " + *p.compiled + " was fitted at eps = " + formatValue(compiled.eps) +
                            "; set eps=" + formatValue(compiled.eps));
    const AsapFeatures recorded = parseAsapFeatures(compiled.features);
    if (p.features != AsapFeatures::Potentials && p.features != recorded)
      throw InvalidArgument("asap: " + *p.compiled + " was compiled with features=" + compiled.features +
                            "; drop features=" + asapFeaturesName(p.features) + " or set it to " + compiled.features);
    if (p.variant == AsapVariant::Asap0 && predictsBothDuals(recorded))
      throw InvalidArgument("asap: " + *p.compiled + " predicts both duals (no closure); variant=asap0 does not apply");
    const CompiledAsapLayer& layer = compiled.at(p.layer);
    p.features = recorded;
    p.slices = layer.slices;
    p.beta = layer.beta;
    if (predictsBothDuals(recorded)) p.keyBeta = layer.keyBeta;
    return p;
  }
  if (p.dual) {
    if (p.slices || p.beta || p.keyBeta)
      throw InvalidArgument("asap: give either dual=PATH.npy or slices=PATH.npy with beta=PATH.npy, not both");
    if (p.features != AsapFeatures::Potentials)
      throw InvalidArgument("asap: features applies to slices+beta, not to a given dual");
    return p;
  }
  if (!p.slices || !p.beta)
    throw InvalidArgument("asap needs a compiled layer (slices=PATH.npy, L×d, and beta=PATH.npy, length L, or "
                          "compiled=DIR from `tlens asap-compile`) or a source dual (dual=PATH.npy, score "
                          "coordinates, e.g. u.npy from `tlens plan`)");
  if (p.beta->size() != p.slices->rows())
    throw InvalidArgument("asap: beta has " + std::to_string(p.beta->size()) + " entries but slices has L = " +
                          std::to_string(p.slices->rows()) + " rows; beta needs one coefficient per slice");
  if (!p.slices->allFinite() || !p.beta->allFinite()) throw InvalidArgument("asap: slices and beta must be finite");
  if (predictsBothDuals(p.features) != p.keyBeta.has_value())
    throw InvalidArgument(p.keyBeta ? "asap: key_beta is only used with features=predict-both"
                                    : "asap: features=predict-both needs key_beta=PATH.npy (β_g, length L)");
  if (p.keyBeta && (p.keyBeta->size() != p.slices->rows() || !p.keyBeta->allFinite()))
    throw InvalidArgument("asap: key_beta needs L = " + std::to_string(p.slices->rows()) +
                          " finite coefficients; it has " + std::to_string(p.keyBeta->size()));
  return p;
}

template <class T>
PlanResult<T> asapAttention(const AttentionInput<T>& input, const AsapParams& params, Feedback&) {
  asapParamBindings().check(params, "asap");
  validateInput(input);
  if (params.maskMode == MaskMode::KeepQueries) return asapDense(input, params, input.mask);
  if (params.dual && input.mask && !input.mask->all()) {
    const AsapParams onValid = asapParamsOnValid(params, *input.mask);
    return runOnValidSubsequence<T>(input, [&](const AttentionInput<T>& v) { return asapDense(v, onValid, std::nullopt); });
  }
  return runOnValidSubsequence<T>(input, [&](const AttentionInput<T>& v) { return asapDense(v, params, std::nullopt); });
}

template Vec<float> asapSourceDual(const AttentionInput<float>&, const AsapParams&, const std::optional<Mask>&,
                                   PlanResult<float>&);
template Vec<double> asapSourceDual(const AttentionInput<double>&, const AsapParams&, const std::optional<Mask>&,
                                    PlanResult<double>&);
template PlanResult<float> asapAttention(const AttentionInput<float>&, const AsapParams&, Feedback&);
template PlanResult<double> asapAttention(const AttentionInput<double>&, const AsapParams&, Feedback&);

void registerAsap(OperatorRegistry& registry) {
  CudaPath<AsapParams> cuda;
  cuda.run = asapOnDevice;
  cuda.unsupported = [](const AsapParams& p) -> std::optional<std::string> {
    if (!predictsBothDuals(p.features)) return std::nullopt;
    return std::string("features=predict-both (no closure) runs on the CPU reference");
  };
  registry.add(familyInfo<AsapParams>(
      {{"asap", "ASAP",
        "compiled Sinkhorn layer: sliced-potential dual prediction + entropic c-transforms (needs slices+beta "
        "files, or a dual)"},
       asapParamBindings(),
       {},
       {},
       cuda},
      [](const auto& input, const AsapParams& p, Feedback& f) { return asapAttention(input, p, f); }));
}

}  // namespace tl
