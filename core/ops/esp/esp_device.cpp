#include "ops/esp/esp_device.h"

#include <chrono>
#include <utility>

#include "ops/device_batches.h"
#include "ops/esp/esp.h"
#include "ops/esp/esp_result.h"
#include "ops/esp/esp_soft_device.h"

namespace tl {
namespace {

// One sorted slice of one head as the device returns it: values ascending, orders the tokens.
struct SortedSlice {
  const float* queryValues;
  const int* queryOrder;
  const float* keyValues;
  const int* keyOrder;
  int nq, nk;
};

// The CPU's HardSlice of one sorted slice: the projections put back in token order, the device's orders kept.
HardSlice sliceFromSorted(const SortedSlice& s, const std::vector<RankCouplingEntry>& coupling, TiePolicy ties) {
  Vec<float> queryProjection(s.nq), keyProjection(s.nk);
  for (int r = 0; r < s.nq; ++r) queryProjection(s.queryOrder[r]) = s.queryValues[r];
  for (int r = 0; r < s.nk; ++r) keyProjection(s.keyOrder[r]) = s.keyValues[r];
  return hardSliceFromOrders(queryProjection, std::vector<int>(s.queryOrder, s.queryOrder + s.nq), keyProjection,
                             std::vector<int>(s.keyOrder, s.keyOrder + s.nk), coupling, ties);
}

// Heads of one launch: equal shapes, no padding (subsequence has compacted them).
std::vector<PlanResult<float>> espBatch(const AttentionBatch<float>& heads, const EspParams& p,
                                        const DeviceRequest& request, const DenseKernels& kernels,
                                        Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const int batch = int(heads.size());
  const int nq = int(heads.front().Q.rows()), nk = int(heads.front().K.rows()), d = int(heads.front().Q.cols());
  const int dv = heads.front().V ? int(heads.front().V->cols()) : 0;
  const MatF theta = sliceDirections(p.slices, d).cast<float>();  // only the L×d directions travel
  const int L = int(theta.rows());
  std::vector<MatF> queries, keys;
  for (const auto& head : heads) {
    auto [Q, K] = espQueriesAndKeys(head, p);
    queries.push_back(std::move(Q));
    keys.push_back(std::move(K));
  }
  const auto itself = [](const MatF& m) -> const MatF& { return m; };
  const std::vector<float> q = stacked(queries, itself), k = stacked(keys, itself);
  const std::vector<float> v =
      dv ? stacked(heads, [](const AttentionInput<float>& h) -> const MatF& { return *h.V; }) : std::vector<float>{};
  const std::vector<RankCouplingEntry> coupling = rankCoupling(nq, nk, p.rankCoupling);

  cuda::EspCudaProblem problem = espDeviceProblem(p, nq, nk);
  problem.batch = batch;
  problem.d = d;
  problem.dv = dv;
  problem.L = L;
  problem.q = q.data();
  problem.k = k.data();
  problem.v = dv ? v.data() : nullptr;
  problem.directions = theta.data();
  cuda::EspCudaOptions options;
  options.weights = [&](const std::vector<float>& costs) { return espDeviceWeights(p, costs); };
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  const cuda::EspCudaResult device = kernels.esp(problem, options);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<PlanResult<float>> results;
  for (int h = 0; h < batch; ++h) {
    std::vector<HardSlice> slices;
    for (int l = 0; l < L; ++l) {
      const size_t q0 = (size_t(h) * L + size_t(l)) * nq, k0 = (size_t(h) * L + size_t(l)) * nk;
      slices.push_back(sliceFromSorted({device.queryValues.data() + q0, device.queryOrder.data() + q0,
                                        device.keyValues.data() + k0, device.keyOrder.data() + k0, nq, nk},
                                       coupling, p.ties));
    }
    PlanResult<float> r = hardEspResult<float>(std::move(slices), batchVector(device.costs, size_t(h), L), theta,
                                               p.tau, nq, nk);
    if (dv) r.output = batchItem(device.output, size_t(h), nq, dv);
    if (request.densePlan) r.plan = MatF(r.plan.dense());
    r.seconds = seconds;  // the launch's wall time, shared by its heads
    r.backend = Backend::Cuda;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

cuda::EspCudaProblem espDeviceProblem(const EspParams& params, int nq, int nk) {
  cuda::EspCudaProblem problem;
  problem.nq = nq;
  problem.nk = nk;
  for (const RankCouplingEntry& e : rankCoupling(nq, nk, params.rankCoupling))
    problem.coupling.push_back({e.r, e.s, float(e.mass)});
  problem.p = float(params.costExponent());
  problem.splitTies = params.ties == TiePolicy::Split;
  return problem;
}

std::vector<float> espDeviceWeights(const EspParams& params, const std::vector<float>& costs) {
  return toVector(sliceWeights(Vec<float>(Eigen::Map<const Vec<float>>(costs.data(), Eigen::Index(costs.size()))),
                               params.tau));
}

std::vector<PlanResult<float>> espOnDevice(const AttentionBatch<float>& heads, const EspParams& params,
                                           const DeviceRequest& request, const DenseKernels& kernels,
                                           Feedback& feedback) {
  params.check();
  if (params.sort == SortMode::Soft) {  // SoftSort's dense plan, head by head (esp_soft_device.h)
    std::vector<PlanResult<float>> soft;
    for (const AttentionInput<float>& head : heads) soft.push_back(espSoftOnDevice(head, params, kernels, feedback));
    return soft;
  }
  std::vector<PlanResult<float>> results =
      runInDeviceBatches(heads, params.maskMode, [&](const AttentionBatch<float>& batch, const std::optional<Mask>&) {
        return espBatch(batch, params, request, kernels, feedback);
      });
  for (size_t h = 0; h < heads.size(); ++h)
    if (heads[h].mask && !heads[h].mask->all()) widenEspMatchings(results[h], *heads[h].mask);
  return results;
}

}  // namespace tl
