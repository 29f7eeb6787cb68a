#include "ops/asap/asap_device.h"

#include <chrono>
#include <memory>
#include <utility>

#include "ops/asap/asap_steps.h"
#include "ops/device_batches.h"
#include "ops/device_plan.h"
#include "ops/log_domain.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/sinkhorn/sinkhorn_loop.h"

namespace tl {
namespace {

// Heads of one launch: equal shapes, one key mask (keep-queries) or none.
std::vector<PlanResult<float>> asapBatch(const AttentionBatch<float>& heads, const std::optional<Mask>& keyMask,
                                         const AsapParams& p, const DeviceRequest& request,
                                         const DenseKernels& kernels, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  for (const auto& head : heads) checkScaledScoreBound(head.Q, head.K, p.eps);
  const int batch = int(heads.size());
  const Eigen::Index nq = heads.front().Q.rows(), nk = heads.front().K.rows(), d = heads.front().Q.cols();
  const int dv = heads.front().V ? int(heads.front().V->cols()) : 0;
  // The Sinkhorn teacher's marginals (docs/operators/asap.md#masks): 1/n_q, and 1/n_k on active keys.
  const auto [logMu, logNu] = sinkhornLogMarginals<float>(nq, nk, keyMask);
  std::vector<PlanResult<float>> results(heads.size());
  std::vector<float> u0;  // [batch][n_q], score coordinates
  for (size_t h = 0; h < heads.size(); ++h) {
    const Vec<float> u = asapSourceDual(heads[h], p, keyMask, results[h]);
    results[h].extras["asap_u"] = u;
    u0.insert(u0.end(), u.data(), u.data() + u.size());
  }
  const std::vector<float> q = stacked(heads, [](const AttentionInput<float>& h) -> const MatF& { return h.Q; });
  const std::vector<float> k = stacked(heads, [](const AttentionInput<float>& h) -> const MatF& { return h.K; });

  // The closures: the loop of the transposed problem (keys as rows, attention scale n_q so its plan is Aᵀ)
  // from u0 as its column duals.
  const cuda::AttentionProblem transposed = cuda::batchedProblem(batch, int(nk), int(nq), int(d), k.data(), q.data(),
                                                                 nullptr, 0, toVector(logNu), toVector(logMu), float(nq));
  cuda::CudaOptions options;
  options.errors = true;
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  const int steps = asapClosures(p.variant, p.closing);
  const cuda::CudaAttentionResult loop = kernels.sinkhorn(transposed, {steps, p.eps, u0}, options);
  const std::vector<float>& u = loop.v;  // the original orientation: queries' duals, keys' duals
  const std::vector<float>& v = loop.u;

  // Output and, when asked, the dense plan from the final duals.
  const std::vector<float> values =
      dv ? stacked(heads, [](const AttentionInput<float>& h) -> const MatF& { return *h.V; }) : std::vector<float>{};
  const cuda::AttentionProblem original = cuda::batchedProblem(batch, int(nq), int(nk), int(d), q.data(), k.data(),
                                                               values.data(), dv, toVector(logMu), toVector(logNu),
                                                               float(nq));
  cuda::CudaOptions products;
  products.plan = request.densePlan;
  products.errors = false;
  products.canceled = options.canceled;
  cuda::CudaAttentionResult applied;
  if (dv || request.densePlan) applied = kernels.planFromDuals(original, u, v, p.eps, products);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  for (int h = 0; h < batch; ++h) {
    PlanResult<float>& r = results[size_t(h)];
    const size_t item = size_t(h);
    setMarginalTargets<float>(logMu, logNu, float(nq), r);
    r.u = batchVector(u, item, nq);
    r.v = batchVector(v, item, nk);
    const cuda::StepErrors& e = loop.errorHistory[item * size_t(steps) + size_t(steps - 1)];
    r.errors = {e.colMax, e.colMean, e.rowMax, e.rowMean};  // the transposed plan's rows are A's columns
    r.errorHistory = {r.errors};
    if (dv) r.output = batchItem(applied.output, item, nq, dv);
    if (request.densePlan) {
      r.plan = batchItem(applied.plan, item, nq, nk);
    } else {
      r.plan = keptOnDevice({heads[item].Q, heads[item].K, original.logMu, original.logNu, float(nq)}, u, v, item,
                            p.eps, kernels);
    }
    r.seconds = seconds;  // the launches' wall time, shared by their heads
    r.backend = Backend::Cuda;
  }
  return results;
}

}  // namespace

std::vector<PlanResult<float>> asapOnDevice(const AttentionBatch<float>& heads, const AsapParams& params,
                                            const DeviceRequest& request, const DenseKernels& kernels,
                                            Feedback& feedback) {
  asapParamBindings().check(params, "asap");
  if (heads.empty()) return {};
  AsapParams forHeads = params;
  const std::optional<Mask>& mask = heads.front().mask;
  if (params.dual && params.maskMode == MaskMode::Subsequence && mask && !mask->all()) {
    // A full-length dual is cut to the valid tokens, as on the CPU: per mask, so heads with others run alone.
    for (const auto& head : heads)
      if (!sameMask(head, heads.front())) {
        std::vector<PlanResult<float>> out;
        for (const auto& one : heads)
          out.push_back(std::move(asapOnDevice({one}, params, request, kernels, feedback).front()));
        return out;
      }
    forHeads = asapParamsOnValid(params, *mask);
  }
  return runInDeviceBatches(heads, params.maskMode, [&](const AttentionBatch<float>& batch, const std::optional<Mask>& keyMask) {
    return asapBatch(batch, keyMask, forHeads, request, kernels, feedback);
  });
}

}  // namespace tl
