#include "ops/softmax/softmax.h"

#include <chrono>
#include <optional>
#include <utility>

#include "ops/dense_device.h"
#include "ops/family.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "ops/softmax/row_softmax.h"
#include "ops/subsequence.h"

namespace tl {

const ParamBindings<SoftmaxParams>& softmaxParamBindings() {
  static const ParamBindings<SoftmaxParams> bindings = [] {
    ParamBindings<SoftmaxParams> b;
    bindMaskMode(b, true);
    return b;
  }();
  return bindings;
}

SoftmaxParams::SoftmaxParams() { softmaxParamBindings().fillDefaults(*this); }
SoftmaxParams SoftmaxParams::from(const ParamSet& resolved) { return softmaxParamBindings().fill(resolved); }

namespace {

// One run on an input whose only possible mask is the keep-queries key mask: the T = 1 Sinkhorn's result
// (duals, targets, one marginal-error entry) from the fused row softmax (ops/softmax/row_softmax.h).
template <class T>
PlanResult<T> softmaxOnTokens(const AttentionInput<T>& in, const std::optional<Mask>& keyMask, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  checkDenseSize(nq, nk, sizeof(T), "Softmax");
  feedback.throwIfCanceled();
  const auto [logMu, logNu] = sinkhornLogMarginals<T>(nq, nk, keyMask);
  // v: the Sinkhorn loop's starting column potential, 0 on valid keys and −inf on padded ones (eps = 1, so eps
  // units are score coordinates).
  const Vec<T> v = sinkhorn_loop::startingPotential(logNu);
  RowSoftmax<T> softmax = rowSoftmax<T>(in.Q, in.K, keyMask ? &v : nullptr, in.V ? &*in.V : nullptr);
  checkScaledScores(softmax.maxAbsScore, 1.0);

  PlanResult<T> r;
  setMarginalTargets(logMu, logNu, T(nq), r);  // attention scale A = n_q·P
  r.u = logMu - softmax.logSumExp;             // u_i = log(1/n_q) − LSE_j(S_ij + v_j); every query is active
  r.v = v;
  r.uHistory = r.u.transpose();
  r.vHistory = r.v.transpose();
  r.errors = marginalErrorsFromSums(softmax.rowSums, r.rowTarget, softmax.colSums, r.colTarget);
  r.errorHistory = {r.errors};
  r.plan = std::move(softmax.plan);
  r.output = std::move(softmax.output);
  feedback.setProgress(1.0, "softmax");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

// Row softmax is exactly the first Sinkhorn normalisation (docs/operators/softmax.md#definition) and returns that
// step's duals and errors: u_i = log(1/n_q) − LSE_j(S_ij + v_j), v = 0 (−inf on padded keys), eps = 1. It is
// computed by the fused pass of row_softmax.h, one exponential per entry instead of the loop's three; the tests
// hold it to sinkhorn:T=1.
template <class T>
PlanResult<T> softmaxAttention(const AttentionInput<T>& input, const SoftmaxParams& params, Feedback& feedback) {
  softmaxParamBindings().check(params, "softmax");
  validateInput(input);
  if (params.maskMode == MaskMode::KeepQueries) return softmaxOnTokens(input, input.mask, feedback);
  return runOnValidSubsequence<T>(
      input, [&](const AttentionInput<T>& valid) { return softmaxOnTokens(valid, std::nullopt, feedback); });
}

template PlanResult<float> softmaxAttention(const AttentionInput<float>&, const SoftmaxParams&, Feedback&);
template PlanResult<double> softmaxAttention(const AttentionInput<double>&, const SoftmaxParams&, Feedback&);

void registerSoftmax(OperatorRegistry& registry) {
  CudaPath<SoftmaxParams> cuda;
  cuda.run = [](const AttentionBatch<float>& heads, const SoftmaxParams& p, const DeviceRequest& request,
                const DenseKernels& kernels, Feedback& feedback) {
    return runDenseOnDevice(heads, {1, 1.0, true, p.maskMode}, request, kernels, feedback);
  };
  registry.add(familyInfo<SoftmaxParams>(
      {{"softmax", "Softmax", "row softmax of QKᵀ/√d (the T=1 Sinkhorn step): rows sum to 1, columns do not"},
       softmaxParamBindings(),
       {Backend::Torch},
       {},
       cuda},
      [](const auto& input, const SoftmaxParams& p, Feedback& f) { return softmaxAttention(input, p, f); }));
}

}  // namespace tl
