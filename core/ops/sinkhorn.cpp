#include "ops/sinkhorn.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "common/errors.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/registry.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

void setRowError(MarginalErrors& e, SideError rows) {
  e.rowMax = rows.max;
  e.rowMean = rows.mean;
}
void setColError(MarginalErrors& e, SideError cols) {
  e.colMax = cols.max;
  e.colMean = cols.mean;
}

// One run on an input whose only possible mask is the keep-queries key mask. Potentials are kept in
// eps units (ut = u/eps, vt = v/eps) so every half-step is one log-sum-exp over X = S/eps.
//
// Marginal errors after step t need the sums of both sides of plan t. The closing side comes from step t's
// own log-sum-exp; the other side is exactly what step t+1 computes (its LSE at the old potential), so the
// loop runs one extra half-step without updating to get the last plan's open side. Cost: T+1 passes.
template <class T>
PlanResult<T> sinkhornLogDomain(const AttentionInput<T>& in, const SinkhornParams& p,
                                const std::optional<Mask>& keyMask, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  checkDenseSize(nq, nk, sizeof(T), "Sinkhorn");
  const T eps = T(p.eps);
  const T negInf = -std::numeric_limits<T>::infinity();
  const Mat<T> X = scores(in.Q, in.K) / eps;

  // Marginals (spec/asap.md §2.3): mu_i = 1/n_q; nu_j = 1/n_k, or 0 on padded keys (keep-queries, §2.5).
  const Vec<T> logMu = Vec<T>::Constant(nq, -std::log(T(nq)));
  Vec<T> logNu = Vec<T>::Constant(nk, -std::log(T(nk)));
  if (keyMask)
    for (Eigen::Index j = 0; j < nk; ++j)
      if (!(*keyMask)(j)) logNu(j) = negInf;

  PlanResult<T> r;
  // Attention scale A = n_q·P: rows target n_q·mu = 1, columns n_q·nu (1 when square and unpadded).
  r.rowTarget = (exactExp(logMu.array()) * T(nq)).matrix();
  r.colTarget = (exactExp(logNu.array()) * T(nq)).matrix();
  r.massMismatch = std::abs(r.rowTarget.sum() - r.colTarget.sum()) > 1e-6 * double(nq);

  Vec<T> ut = Vec<T>::Zero(nq);
  Vec<T> vt = Vec<T>::Zero(nk);
  if (keyMask) vt = (logNu.array() == negInf).select(negInf, vt);  // v_j = -inf on padded keys

  r.uHistory.resize(p.T, nq);
  r.vHistory.resize(p.T, nk);
  r.errorHistory.resize(p.T);
  const T scale = T(nq);
  for (int t = 1; t <= p.T + 1; ++t) {
    feedback.throwIfCanceled();
    const bool rowStep = (t % 2 == 1);
    if (rowStep) {
      const Vec<T> R = rowLogSumExp(X, vt);  // row sums of plan t-1: n_q·exp(ut + R)
      if (t > 1) {
        setRowError(r.errorHistory[t - 2], sideError<T>(scale * exactExp((ut + R).array()).matrix(), r.rowTarget));
      }
      if (t > p.T) break;
      ut = logMu - R;  // row closure: source c-transform of v
      setRowError(r.errorHistory[t - 1], sideError<T>(scale * exactExp((ut + R).array()).matrix(), r.rowTarget));
    } else {
      const Vec<T> C = colLogSumExp(X, ut);  // column sums of plan t-1: n_q·exp(vt + C)
      if (t > 1) {
        setColError(r.errorHistory[t - 2], sideError<T>(scale * exactExp((vt + C).array()).matrix(), r.colTarget));
      }
      if (t > p.T) break;
      vt = logNu - C;  // column closure: key c-transform of u (-inf stays on padded keys)
      setColError(r.errorHistory[t - 1], sideError<T>(scale * exactExp((vt + C).array()).matrix(), r.colTarget));
    }
    r.uHistory.row(t - 1) = (eps * ut).transpose();
    r.vHistory.row(t - 1) = (eps * vt).transpose();
    feedback.setProgress(double(t) / p.T, "sinkhorn");
  }

  r.u = eps * ut;
  r.v = eps * vt;
  // A = n_q·exp(X + ut ⊕ vt); -inf potentials give exact zeros.
  r.plan = (scale * exactExp(((X.colwise() + ut).rowwise() + vt.transpose()).array())).matrix();
  if (in.V) r.output = r.plan * (*in.V);
  r.errors = r.errorHistory.back();
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
  ParamSpec T;
  T.name = "T";
  T.type = ParamType::Int;
  T.min = 1;
  T.max = 100000;
  T.uiMin = 1;
  T.uiMax = 500;
  T.defaultValue = 10LL;
  T.description = "budget: single normalisations, rows first (T=1 is softmax; even T ends on columns)";
  ParamSpec eps;
  eps.name = "eps";
  eps.type = ParamType::Real;
  eps.min = 0;
  eps.minExclusive = true;
  eps.max = 1e6;
  eps.uiMin = 1e-2;
  eps.uiMax = 1e2;
  eps.logScale = true;
  eps.defaultValue = 1.0;
  eps.description = "temperature dividing the scores: kernel exp(S/eps)";
  registry.add({"sinkhorn", "Sinkhorn", "log-domain Sinkhorn scaling of exp(QKᵀ/(√d·eps)) with a finite budget T",
                ParamSchema({T, eps, maskModeSpec(true)}),
                [](const ParamSet& p) { return std::make_unique<SinkhornOperator>(p); }});
}

}  // namespace tl
