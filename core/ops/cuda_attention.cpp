#include "ops/cuda_attention.h"

#include <memory>
#include <optional>
#include <utility>

#include "cuda/sinkhorn_cuda.h"
#include "cuda/softmax_cuda.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/device_batches.h"
#include "ops/sinkhorn/sinkhorn_loop.h"

namespace tl {
namespace {

// One head's arrays in the layout the CUDA API takes (row-major float32, batch 1). Eigen's Mat is row-major,
// so the matrices are passed as they are.
struct HeadArrays {
  MatF Q, K;
  std::vector<float> logMu, logNu;
  float scale = 1.f;

  cuda::AttentionProblem problem(const MatF* V) const {
    cuda::AttentionProblem p;
    p.nq = int(Q.rows());
    p.nk = int(K.rows());
    p.d = int(Q.cols());
    p.q = Q.data();
    p.k = K.data();
    if (V) {
      p.v = V->data();
      p.dv = int(V->cols());
    }
    p.logMu = logMu;
    p.logNu = logNu;
    p.scale = scale;
    return p;
  }
  // The same head with queries and keys exchanged: the plan of that problem under exchanged duals is Aᵀ.
  HeadArrays transposed() const { return {K, Q, logNu, logMu, scale}; }
};

std::vector<float> toVector(const Vec<float>& v) { return {v.data(), v.data() + v.size()}; }

Mat<float> matrixOf(const std::vector<float>& values, Eigen::Index rows, Eigen::Index cols) {
  return Eigen::Map<const Mat<float>>(values.data(), rows, cols);
}

// A Sinkhorn or softmax plan that stays with its duals: A = scale·exp((QKᵀ/√d + u ⊕ v)/eps), never stored.
// Every product, the dense matrix and the display tiles run on the GPU from Q, K and the duals.
class DevicePlan final : public TransportPlan<float> {
 public:
  DevicePlan(HeadArrays head, std::vector<float> u, std::vector<float> v, double eps)
      : head_(std::move(head)), u_(std::move(u)), v_(std::move(v)), eps_(eps) {}
  Eigen::Index rows() const override { return head_.Q.rows(); }
  Eigen::Index cols() const override { return head_.K.rows(); }

  Mat<float> apply(const Mat<float>& V) const override {
    const auto r = cuda::planFromDualsCuda(head_.problem(&V), u_, v_, eps_, {});
    return matrixOf(r.output, rows(), V.cols());
  }
  Mat<float> applyTransposed(const Mat<float>& W) const override {
    const HeadArrays t = head_.transposed();
    const auto r = cuda::planFromDualsCuda(t.problem(&W), v_, u_, eps_, {});
    return matrixOf(r.output, cols(), W.cols());
  }
  Mat<float> materialize() const override {
    cuda::CudaOptions o;
    o.plan = true;
    return matrixOf(cuda::planFromDualsCuda(head_.problem(nullptr), u_, v_, eps_, o).plan, rows(), cols());
  }
  PooledPlan<float> pooled(int maxRows, int maxCols) const override {
    cuda::CudaOptions o;
    o.tileRows = maxRows;
    o.tileCols = maxCols;
    const cuda::DisplayTiles t = cuda::planFromDualsCuda(head_.problem(nullptr), u_, v_, eps_, o).tiles;
    return {t.rowStarts, t.colStarts, matrixOf(t.mean, t.rows, t.cols), matrixOf(t.max, t.rows, t.cols)};
  }
  const char* kind() const override { return "duals on the GPU"; }

 private:
  HeadArrays head_;
  std::vector<float> u_, v_;  // score coordinates
  double eps_;
};

// Heads of one launch: equal shapes, one key mask (keep-queries) or none.
std::vector<PlanResult<float>> runBatch(const AttentionBatch<float>& heads, const std::optional<Mask>& keyMask,
                                        const DenseCudaRun& run, const DeviceRequest& request, Feedback& feedback) {
  const AttentionInput<float>& first = heads.front();
  const Eigen::Index nq = first.Q.rows(), nk = first.K.rows(), d = first.Q.cols();
  const Eigen::Index dv = first.V ? first.V->cols() : 0;
  const int batch = int(heads.size());
  const auto [logMu, logNu] = sinkhornLogMarginals<float>(nq, nk, keyMask);
  // [batch][n][d], row-major like Eigen's Mat.
  std::vector<float> q, k, v;
  for (const auto& h : heads) {
    q.insert(q.end(), h.Q.data(), h.Q.data() + h.Q.size());
    k.insert(k.end(), h.K.data(), h.K.data() + h.K.size());
    if (dv) v.insert(v.end(), h.V->data(), h.V->data() + h.V->size());
  }
  cuda::AttentionProblem problem;
  problem.batch = batch;
  problem.nq = int(nq);
  problem.nk = int(nk);
  problem.d = int(d);
  problem.q = q.data();
  problem.k = k.data();
  if (dv) {
    problem.v = v.data();
    problem.dv = int(dv);
  }
  problem.logMu = toVector(logMu);
  problem.logNu = toVector(logNu);
  problem.scale = float(nq);

  cuda::CudaOptions options;
  options.plan = request.densePlan;
  options.histories = true;
  options.errors = true;
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  const cuda::CudaAttentionResult g = run.softmax ? cuda::softmaxCuda(problem, options)
                                                  : cuda::sinkhornCuda(problem, {run.budget, run.eps}, options);

  // One result per head: slices of the batched arrays.
  std::vector<PlanResult<float>> results(heads.size());
  for (int h = 0; h < batch; ++h) {
    PlanResult<float>& r = results[size_t(h)];
    auto slice = [h](const std::vector<float>& all, size_t perHead) {
      return std::vector<float>(all.begin() + long(h * perHead), all.begin() + long((h + 1) * perHead));
    };
    const std::vector<float> u = slice(g.u, size_t(nq)), vDual = slice(g.v, size_t(nk));
    setMarginalTargets<float>(logMu, logNu, float(nq), r);
    r.u = Eigen::Map<const Vec<float>>(u.data(), nq);
    r.v = Eigen::Map<const Vec<float>>(vDual.data(), nk);
    r.uHistory = matrixOf(slice(g.uHistory, size_t(g.steps * nq)), g.steps, nq);
    r.vHistory = matrixOf(slice(g.vHistory, size_t(g.steps * nk)), g.steps, nk);
    for (int t = 0; t < g.steps && !g.errorHistory.empty(); ++t) {
      const cuda::StepErrors& e = g.errorHistory[size_t(h * g.steps + t)];
      r.errorHistory.push_back({e.rowMax, e.rowMean, e.colMax, e.colMean});
    }
    if (!r.errorHistory.empty()) r.errors = r.errorHistory.back();
    if (dv) r.output = matrixOf(slice(g.output, size_t(nq * dv)), nq, dv);
    if (request.densePlan) {
      r.plan = matrixOf(slice(g.plan, size_t(nq * nk)), nq, nk);
    } else {
      HeadArrays head{heads[size_t(h)].Q, heads[size_t(h)].K, problem.logMu, problem.logNu, float(nq)};
      r.plan = Plan<float>(std::make_shared<const DevicePlan>(std::move(head), u, vDual, run.softmax ? 1.0 : run.eps));
    }
    r.seconds = g.seconds;  // the launch's wall time, shared by its heads
    r.backend = Backend::Cuda;
  }
  return results;
}

}  // namespace

const DenseKernels& cudaDenseKernels() {
  static const DenseKernels kernels{cuda::sinkhornCuda, cuda::planFromDualsCuda};
  return kernels;
}

std::vector<PlanResult<float>> runDenseOnCuda(const AttentionBatch<float>& heads, const DenseCudaRun& run,
                                              const DeviceRequest& request, Feedback& feedback) {
  return runInDeviceBatches(heads, run.maskMode, [&](const AttentionBatch<float>& batch, const std::optional<Mask>& keyMask) {
    return runBatch(batch, keyMask, run, request, feedback);
  });
}

}  // namespace tl
