#include "ops/dense_device.h"

#include <memory>
#include <optional>
#include <utility>

#include "ops/device_batches.h"
#include "ops/device_plan.h"
#include "ops/log_domain.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/sinkhorn/sinkhorn_loop.h"

namespace tl {
namespace {

// Heads of one launch: equal shapes, one key mask (keep-queries) or none.
std::vector<PlanResult<float>> runBatch(const AttentionBatch<float>& heads, const std::optional<Mask>& keyMask,
                                        const DenseDeviceRun& run, const DeviceRequest& request,
                                        const DenseKernels& kernels, Feedback& feedback) {
  for (const auto& head : heads) checkScaledScoreBound(head.Q, head.K, run.eps);
  const AttentionInput<float>& first = heads.front();
  const Eigen::Index nq = first.Q.rows(), nk = first.K.rows(), d = first.Q.cols();
  const Eigen::Index dv = first.V ? first.V->cols() : 0;
  const int batch = int(heads.size());
  const auto [logMu, logNu] = sinkhornLogMarginals<float>(nq, nk, keyMask);
  const std::vector<float> q = stacked(heads, [](const AttentionInput<float>& h) -> const MatF& { return h.Q; });
  const std::vector<float> k = stacked(heads, [](const AttentionInput<float>& h) -> const MatF& { return h.K; });
  const std::vector<float> v =
      dv ? stacked(heads, [](const AttentionInput<float>& h) -> const MatF& { return *h.V; }) : std::vector<float>{};
  const cuda::AttentionProblem problem = cuda::batchedProblem(batch, int(nq), int(nk), int(d), q.data(), k.data(),
                                                              v.data(), int(dv), toVector(logMu), toVector(logNu),
                                                              float(nq));

  cuda::CudaOptions options;
  options.plan = request.densePlan;
  options.histories = true;
  options.errors = true;
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  const cuda::CudaAttentionResult g = run.softmax ? kernels.softmax(problem, options)
                                                  : kernels.sinkhorn(problem, {run.budget, run.eps}, options);

  // One result per head: slices of the batched arrays.
  std::vector<PlanResult<float>> results(heads.size());
  for (int h = 0; h < batch; ++h) {
    PlanResult<float>& r = results[size_t(h)];
    const size_t item = size_t(h);
    setMarginalTargets<float>(logMu, logNu, float(nq), r);
    setHeadDuals(g, item, nq, nk, r);
    if (dv) r.output = batchItem(g.output, item, nq, dv);
    if (request.densePlan) {
      r.plan = batchItem(g.plan, item, nq, nk);
    } else {
      r.plan = keptOnDevice({heads[item].Q, heads[item].K, problem.logMu, problem.logNu, float(nq)}, g.u, g.v, item,
                            run.softmax ? 1.0 : run.eps, kernels);
    }
    r.seconds = g.seconds;  // the launch's wall time, shared by its heads
    r.backend = Backend::Cuda;
  }
  return results;
}

}  // namespace

std::vector<PlanResult<float>> runDenseOnDevice(const AttentionBatch<float>& heads, const DenseDeviceRun& run,
                                                const DeviceRequest& request, const DenseKernels& kernels,
                                                Feedback& feedback) {
  return runInDeviceBatches(heads, run.maskMode, [&](const AttentionBatch<float>& batch, const std::optional<Mask>& keyMask) {
    return runBatch(batch, keyMask, run, request, kernels, feedback);
  });
}

}  // namespace tl
