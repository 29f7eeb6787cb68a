#include "ops/lot/lot_device.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "ops/device_batches.h"
#include "ops/device_plan.h"
#include "ops/log_domain.h"
#include "ops/lot/lot_coupling.h"
#include "ops/lot/lot_steps.h"
#include "ops/lot/low_rank_plan.h"

namespace tl {
namespace {

// One of LOT's two problems for every head of a launch: rows `from` against columns `to`, transport scale.
struct Problem {
  std::vector<float> rows, cols, values;  // [batch][n][d] each; values optional
  // dv = 0: the problem without its values (plans only).
  cuda::AttentionProblem problem(int batch, int nRows, int nCols, int d, int dv, const Vec<float>& logMu,
                                 const Vec<float>& logNu) const {
    // Scale 1: P itself, the factors are kept in transport scale.
    return cuda::batchedProblem(batch, nRows, nCols, d, rows.data(), cols.data(), values.data(), dv, toVector(logMu),
                                toVector(logNu), 1.f);
  }
};

// LOT's plan from the device. Its factors came back to the host, so products and rows are the CPU's
// (low_rank_plan.h); of its display tiles, the means come exactly from the factors' block sums (O(n·r)) and the
// maxima, the one part that needs every entry (O(n_q·n_k·r)), from a kernel over the uploaded factors.
class DeviceLowRankPlan final : public LowRankPlan<float> {
 public:
  // `kernels` must outlive the plan (the GPU's are static).
  DeviceLowRankPlan(LotCoupling<float> coupling, const DenseKernels& kernels)
      : LowRankPlan<float>(std::move(coupling)), kernels_(kernels) {}
  PooledPlan<float> pooled(int maxRows, int maxCols) const override {
    const LotCoupling<float>& c = coupling();
    const MatF glued = c.gluedKeys();
    PooledPlan<float> p = c.pooledMeans(maxRows, maxCols, glued);
    const MatF gT = glued.transpose();  // row-major: each key's r numbers contiguous
    const cuda::LowRankFactors factors{int(c.P1.rows()), int(c.P2.cols()), int(c.P1.cols()), c.P1.data(), gT.data()};
    const auto rows = p.max.rows(), cols = p.max.cols();
    p.max = matrixOf(kernels_.lowRankMaxima(factors, int(rows), int(cols)), rows, cols);
    return p;
  }

 private:
  const DenseKernels& kernels_;
};

// The duals of every head after single normalisation t (0-based) from a run's histories [batch][T][n].
std::vector<float> dualsAtStep(const std::vector<float>& history, int batch, int steps, int t, int n) {
  std::vector<float> out;
  for (int h = 0; h < batch; ++h) {
    const auto first = history.begin() + long((size_t(h) * size_t(steps) + size_t(t)) * size_t(n));
    out.insert(out.end(), first, first + n);
  }
  return out;
}

// Heads without padding whose pivot masses agree: both problems as one launch each.
std::vector<PlanResult<float>> lotBatch(const AttentionBatch<float>& heads, const std::vector<LotPivots>& pivots,
                                        const LotParams& p, const DenseKernels& kernels, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const int batch = int(heads.size());
  const int nq = int(heads.front().Q.rows()), nk = int(heads.front().K.rows()), d = int(heads.front().Q.cols());
  const int r = int(pivots.front().locations.rows());
  const int dv = heads.front().V ? int(heads.front().V->cols()) : 0;
  for (size_t h = 0; h < heads.size(); ++h) {
    const MatF Z = pivots[h].locations.cast<float>();
    checkScaledScoreBound(heads[h].Q, Z, p.eps);
    checkScaledScoreBound(Z, heads[h].K, p.eps);
  }
  const Vec<float> logw = logPivotMasses<float>(pivots.front().massLogits, p.massTemp);
  const Vec<float> logQueries = Vec<float>::Constant(nq, -std::log(float(nq)));  // a = 1/n_q
  const Vec<float> logKeys = Vec<float>::Constant(nk, -std::log(float(nk)));     // b = 1/n_k

  const auto queries = [](const AttentionInput<float>& h) -> const MatF& { return h.Q; };
  const auto keys = [](const AttentionInput<float>& h) -> const MatF& { return h.K; };
  const auto values = [](const AttentionInput<float>& h) -> const MatF& { return *h.V; };
  const auto itself = [](const MatF& m) -> const MatF& { return m; };
  std::vector<MatF> Z;
  for (const LotPivots& pv : pivots) Z.push_back(pv.locations.cast<float>());
  cuda::CudaOptions options;
  options.plan = true;  // the n × r factors, for the views and the errors
  options.histories = true;
  options.errors = false;  // the errors that matter are those of the glued plan A, below
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  const cuda::SinkhornCudaParams loop{p.T, p.eps};

  // (2) pivots → keys, on S2 = Z Kᵀ/√d; with V it also returns P2·V.
  Problem fromPivots{stacked(Z, itself), stacked(heads, keys), dv ? stacked(heads, values) : std::vector<float>{}};
  const cuda::AttentionProblem second = fromPivots.problem(batch, r, nk, d, dv, logw, logKeys);
  const cuda::CudaAttentionResult g2 = kernels.sinkhorn(second, loop, options);
  feedback.setProgress(0.4, "lot");

  // (1) queries → pivots, on S1 = Q Zᵀ/√d; with V its output is P1·(diag(1/w)·P2·V).
  std::vector<MatF> weighted;
  const Vec<float> invw = (-logw.array()).exp().matrix();
  for (int h = 0; h < batch && dv; ++h) weighted.push_back(invw.asDiagonal() * batchItem(g2.output, size_t(h), r, dv));
  Problem toPivots{stacked(heads, queries), stacked(Z, itself), dv ? stacked(weighted, itself) : std::vector<float>{}};
  const cuda::AttentionProblem first = toPivots.problem(batch, nq, r, d, dv, logQueries, logw);
  const cuda::CudaAttentionResult g1 = kernels.sinkhorn(first, loop, options);
  feedback.setProgress(0.8, "lot");

  std::vector<LotCoupling<float>> couplings(heads.size());
  for (int h = 0; h < batch; ++h) {
    LotCoupling<float>& c = couplings[size_t(h)];
    c.logw = logw;
    c.u1 = batchVector(g1.u, size_t(h), nq);
    c.v1 = batchVector(g1.v, size_t(h), r);
    c.u2 = batchVector(g2.u, size_t(h), r);
    c.v2 = batchVector(g2.v, size_t(h), nk);
  }
  // Errors of A after every step but the last from the factors of that step; the last from the final ones.
  cuda::CudaOptions factorsOnly;
  factorsOnly.plan = true;
  factorsOnly.errors = false;
  const cuda::AttentionProblem firstPlain = toPivots.problem(batch, nq, r, d, 0, logQueries, logw);
  const cuda::AttentionProblem secondPlain = fromPivots.problem(batch, r, nk, d, 0, logw, logKeys);
  for (int t = 0; t + 1 < p.T; ++t) {
    feedback.throwIfCanceled();
    const auto P1 = kernels.planFromDuals(firstPlain, dualsAtStep(g1.uHistory, batch, p.T, t, nq),
                                            dualsAtStep(g1.vHistory, batch, p.T, t, r), p.eps, factorsOnly);
    const auto P2 = kernels.planFromDuals(secondPlain, dualsAtStep(g2.uHistory, batch, p.T, t, r),
                                            dualsAtStep(g2.vHistory, batch, p.T, t, nk), p.eps, factorsOnly);
    for (int h = 0; h < batch; ++h) {
      LotCoupling<float>& c = couplings[size_t(h)];
      c.P1 = batchItem(P1.plan, size_t(h), nq, r);
      c.P2 = batchItem(P2.plan, size_t(h), r, nk);
      c.errorHistory.push_back(c.errors());
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<PlanResult<float>> results;
  for (int h = 0; h < batch; ++h) {
    LotCoupling<float>& c = couplings[size_t(h)];
    c.P1 = batchItem(g1.plan, size_t(h), nq, r);
    c.P2 = batchItem(g2.plan, size_t(h), r, nk);
    c.errorHistory.push_back(c.errors());
    std::optional<MatF> output;
    if (dv) output = float(nq) * batchItem(g1.output, size_t(h), nq, dv);
    PlanResult<float> result = lotResult(c, pivots[size_t(h)], std::move(output));
    result.plan = Plan<float>(std::make_shared<const DeviceLowRankPlan>(std::move(c), kernels));
    result.seconds = seconds;  // the launches' wall time, shared by their heads
    result.backend = Backend::Cuda;
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace

std::vector<PlanResult<float>> lotOnDevice(const AttentionBatch<float>& heads, const LotParams& params,
                                           const DenseKernels& kernels, Feedback& feedback) {
  std::vector<PlanResult<float>> results =
      runInDeviceBatches(heads, params.maskMode, [&](const AttentionBatch<float>& batch, const std::optional<Mask>&) {
        std::vector<LotPivots> pivots;
        for (const auto& head : batch) pivots.push_back(lotPivotsFor(head, params, feedback));
        const auto sameMasses = [&](const LotPivots& pv) { return pv.massLogits == pivots.front().massLogits; };
        if (std::all_of(pivots.begin(), pivots.end(), sameMasses)) return lotBatch(batch, pivots, params, kernels, feedback);
        std::vector<PlanResult<float>> one;  // masses differ per head: the marginals differ, one launch each
        for (size_t h = 0; h < batch.size(); ++h)
          one.push_back(std::move(lotBatch({batch[h]}, {pivots[h]}, params, kernels, feedback).front()));
        return one;
      });
  for (size_t h = 0; h < heads.size(); ++h)
    if (heads[h].mask && !heads[h].mask->all()) padLotExtras(results[h], *heads[h].mask);
  return results;
}

}  // namespace tl
