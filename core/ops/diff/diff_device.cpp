#include "ops/diff/diff_device.h"

#include <chrono>
#include <cmath>
#include <memory>
#include <utility>

#include "ops/device_batches.h"
#include "ops/device_plan.h"
#include "ops/marginals.h"

namespace tl {
namespace {

// A = A1 − lambda·A2 for two plans of the same shape: products and the dense matrix from the two.
class DifferencePlan final : public TransportPlan<float> {
 public:
  DifferencePlan(Plan<float> first, Plan<float> second, float lambda)
      : first_(std::move(first)), second_(std::move(second)), lambda_(lambda) {}
  Eigen::Index rows() const override { return first_.rows(); }
  Eigen::Index cols() const override { return first_.cols(); }
  Mat<float> apply(const Mat<float>& V) const override { return first_.apply(V) - lambda_ * second_.apply(V); }
  Mat<float> applyTransposed(const Mat<float>& W) const override {
    return first_.applyTransposed(W) - lambda_ * second_.applyTransposed(W);
  }
  Mat<float> materialize() const override { return first_.dense() - lambda_ * second_.dense(); }
  Mat<float> rowBlock(Eigen::Index first, Eigen::Index count) const override {
    return first_.rowBlock(first, count) - lambda_ * second_.rowBlock(first, count);
  }
  const char* kind() const override { return "two softmax maps, duals on the GPU"; }

 private:
  Plan<float> first_, second_;
  float lambda_;
};

// One softmax map (half 0 or 1 of the head dimension) of every head of a launch.
struct HalfMap {
  std::vector<MatF> Q, K;         // the halves, per head
  cuda::CudaAttentionResult run;  // output [batch][n_q][d_v + 1]: A·V and, last, the row sums A·1
  std::vector<float> colSums;     // [batch][n_k]: Aᵀ·1
};

HalfMap halfMap(const AttentionBatch<float>& heads, int half, const std::vector<float>& valuesAndOnes, int dv,
                const std::vector<float>& logMu, const std::vector<float>& logNu, const DeviceRequest& request,
                const DenseKernels& kernels, Feedback& feedback) {
  const Eigen::Index h = heads.front().Q.cols() / 2;
  HalfMap m;
  for (const auto& head : heads) {
    m.Q.push_back(head.Q.middleCols(half * h, h));
    m.K.push_back(head.K.middleCols(half * h, h));
  }
  const auto itself = [](const MatF& x) -> const MatF& { return x; };
  const std::vector<float> q = stacked(m.Q, itself), k = stacked(m.K, itself);
  const int nq = int(heads.front().Q.rows()), nk = int(heads.front().K.rows());
  // Attention scale n_q: rows sum to 1.
  const cuda::AttentionProblem p = cuda::batchedProblem(int(heads.size()), nq, nk, int(h), q.data(), k.data(),
                                                        valuesAndOnes.data(), dv + 1, logMu, logNu, float(nq));
  cuda::CudaOptions options;
  options.plan = request.densePlan;
  options.errors = false;  // the errors that matter are those of the difference, below
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  m.run = kernels.softmax(p, options);

  // Column sums: the same plan with queries and keys exchanged (and the duals) applied to ones.
  const std::vector<float> ones(size_t(p.batch) * size_t(p.nq), 1.f);
  cuda::AttentionProblem t = p;
  std::swap(t.nq, t.nk);
  t.q = k.data();
  t.k = q.data();
  t.v = ones.data();
  t.dv = 1;
  std::swap(t.logMu, t.logNu);
  m.colSums = kernels.planFromDuals(t, m.run.v, m.run.u, 1.0, {}).output;
  return m;
}

std::vector<PlanResult<float>> diffBatch(const AttentionBatch<float>& heads, const DiffParams& params,
                                         const DeviceRequest& request, const DenseKernels& kernels,
                                         Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = heads.front().Q.rows(), nk = heads.front().K.rows();
  const int dv = heads.front().V ? int(heads.front().V->cols()) : 0;
  // [V | 1] per head: one pass gives A·V and the row sums.
  std::vector<MatF> withOnes;
  for (const auto& head : heads) {
    MatF x(nk, dv + 1);
    if (dv) x.leftCols(dv) = *head.V;
    x.col(dv).setOnes();
    withOnes.push_back(std::move(x));
  }
  const std::vector<float> valuesAndOnes = stacked(withOnes, [](const MatF& x) -> const MatF& { return x; });
  const std::vector<float> logMu(size_t(nq), -std::log(float(nq))), logNu(size_t(nk), -std::log(float(nk)));
  const HalfMap first = halfMap(heads, 0, valuesAndOnes, dv, logMu, logNu, request, kernels, feedback);
  feedback.setProgress(0.5, "diff");
  const HalfMap second = halfMap(heads, 1, valuesAndOnes, dv, logMu, logNu, request, kernels, feedback);
  const float lambda = float(params.lambda);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<PlanResult<float>> results;
  for (size_t b = 0; b < heads.size(); ++b) {
    const MatF O1 = batchItem(first.run.output, b, nq, dv + 1), O2 = batchItem(second.run.output, b, nq, dv + 1);
    PlanResult<float> r;
    if (dv) r.output = O1.leftCols(dv) - lambda * O2.leftCols(dv);
    r.rowTarget = Vec<float>::Ones(nq);
    r.colTarget = Vec<float>::Constant(nk, float(nq) / float(nk));
    const Vec<float> rowSums = O1.col(dv) - lambda * O2.col(dv);
    const Vec<float> colSums = batchVector(first.colSums, b, nk) - lambda * batchVector(second.colSums, b, nk);
    r.errors = marginalErrorsFromSums<float>(rowSums, r.rowTarget, colSums, r.colTarget);
    r.errorHistory = {r.errors};
    if (request.densePlan) {
      r.plan = batchItem(first.run.plan, b, nq, nk) - lambda * batchItem(second.run.plan, b, nq, nk);
    } else {
      auto map = [&](const HalfMap& m) {
        return keptOnDevice({m.Q[b], m.K[b], logMu, logNu, float(nq)}, m.run.u, m.run.v, b, 1.0, kernels);
      };
      r.plan = Plan<float>(std::make_shared<const DifferencePlan>(map(first), map(second), lambda));
    }
    r.seconds = seconds;  // the launches' wall time, shared by their heads
    r.backend = Backend::Cuda;
    results.push_back(std::move(r));
  }
  return results;
}

}  // namespace

std::vector<PlanResult<float>> diffOnDevice(const AttentionBatch<float>& heads, const DiffParams& params,
                                            const DeviceRequest& request, const DenseKernels& kernels,
                                            Feedback& feedback) {
  diffParamBindings().check(params, "diff");
  for (const auto& head : heads) checkDiffHeadDimension(head.Q.cols());
  return runInDeviceBatches(heads, params.maskMode, [&](const AttentionBatch<float>& batch, const std::optional<Mask>&) {
    return diffBatch(batch, params, request, kernels, feedback);
  });
}

}  // namespace tl
