#include "ops/cuda_attention.h"

#include <memory>
#include <optional>
#include <utility>

#include "cuda/sinkhorn_cuda.h"
#include "cuda/softmax_cuda.h"
#include "ops/sinkhorn/sinkhorn.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "ops/subsequence.h"

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

// One unpadded (or keep-queries) head on the GPU.
PlanResult<float> runHead(const AttentionInput<float>& in, const std::optional<Mask>& keyMask, const DenseCudaRun& run,
                          const DeviceRequest& request, Feedback& feedback) {
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  const auto [logMu, logNu] = sinkhornLogMarginals<float>(nq, nk, keyMask);
  HeadArrays head{in.Q, in.K, toVector(logMu), toVector(logNu), float(nq)};

  cuda::CudaOptions options;
  options.plan = request.densePlan;
  options.histories = true;
  options.errors = true;
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  const cuda::AttentionProblem problem = head.problem(in.V ? &*in.V : nullptr);
  const cuda::CudaAttentionResult g = run.softmax ? cuda::softmaxCuda(problem, options)
                                                  : cuda::sinkhornCuda(problem, {run.budget, run.eps}, options);

  PlanResult<float> r;
  setMarginalTargets<float>(logMu, logNu, float(nq), r);
  r.u = Eigen::Map<const Vec<float>>(g.u.data(), nq);
  r.v = Eigen::Map<const Vec<float>>(g.v.data(), nk);
  r.uHistory = matrixOf(g.uHistory, g.steps, nq);
  r.vHistory = matrixOf(g.vHistory, g.steps, nk);
  for (const cuda::StepErrors& e : g.errorHistory) r.errorHistory.push_back({e.rowMax, e.rowMean, e.colMax, e.colMean});
  if (!r.errorHistory.empty()) r.errors = r.errorHistory.back();
  if (in.V) r.output = matrixOf(g.output, nq, in.V->cols());
  if (request.densePlan)
    r.plan = matrixOf(g.plan, nq, nk);
  else
    r.plan = Plan<float>(std::make_shared<const DevicePlan>(std::move(head), g.u, g.v, run.softmax ? 1.0 : run.eps));
  r.seconds = g.seconds;
  r.backend = Backend::Cuda;
  return r;
}

}  // namespace

PlanResult<float> runDenseOnCuda(const AttentionInput<float>& input, const DenseCudaRun& run,
                                 const DeviceRequest& request, Feedback& feedback) {
  validateInput(input);
  if (run.maskMode == MaskMode::KeepQueries) return runHead(input, input.mask, run, request, feedback);
  return runOnValidSubsequence<float>(
      input, [&](const AttentionInput<float>& valid) { return runHead(valid, std::nullopt, run, request, feedback); });
}

}  // namespace tl
