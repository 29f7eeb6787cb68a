#include "ops/banded/banded_device.h"

#include <memory>
#include <mutex>
#include <utility>

#include "ops/banded/band_plan.h"
#include "ops/banded/banded_forward.h"
#include "ops/device_batches.h"
#include "ops/device_plan.h"
#include "ops/log_domain.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn_loop.h"

namespace tl {
namespace {

// One head's system (real tokens, and the dustbin when asked) in the kernels' layout.
struct BandHead {
  MatF Q, K;
  std::vector<float> logMu, logNu;
  float scale = 1.f;
  cuda::AttentionProblem problem() const {
    return cuda::batchedProblem(1, int(Q.rows()), int(K.rows()), int(Q.cols()), Q.data(), K.data(), nullptr, 0,
                                logMu, logNu, scale);
  }
};

// The band plan of a device run before anything asked for it: the final potentials beside Q and K. The first
// product, entry or row block launches the band-of-scores kernel once (O(n·W)); from then on it is the CPU's
// BandPlan over that band.
class DeviceBandPlan final : public TransportPlan<float> {
 public:
  DeviceBandPlan(BandHead head, Vec<float> ut, Vec<float> vt, double eps, Eigen::Index W, const DenseKernels& kernels)
      : head_(std::move(head)), ut_(std::move(ut)), vt_(std::move(vt)), eps_(eps), W_(W), kernels_(kernels) {}
  Eigen::Index rows() const override { return head_.Q.rows(); }
  Eigen::Index cols() const override { return head_.K.rows(); }
  Mat<float> apply(const Mat<float>& V) const override { return band().apply(V); }
  Mat<float> applyTransposed(const Mat<float>& W) const override { return band().applyTransposed(W); }
  Mat<float> materialize() const override { return band().materialize(); }
  Mat<float> rowBlock(Eigen::Index first, Eigen::Index count) const override { return band().rowBlock(first, count); }
  bool forEachStoredEntry(const EntryVisitor<float>& visit) const override { return band().forEachStoredEntry(visit); }
  const char* kind() const override { return "band"; }

 private:
  const BandPlan<float>& band() const {
    std::call_once(formed_, [this] {
      const std::vector<float> scores = kernels_.bandScores(head_.problem(), W_, eps_);
      const auto X = std::make_shared<const BandScores<float>>(matrixOf(scores, rows(), 2 * W_ + 1), cols(), W_);
      band_ = std::make_unique<const BandPlan<float>>(X, ut_, vt_, head_.scale, rows(), cols());
    });
    return *band_;
  }

  BandHead head_;
  Vec<float> ut_, vt_;
  double eps_;
  Eigen::Index W_;
  const DenseKernels& kernels_;
  mutable std::once_flag formed_;
  mutable std::unique_ptr<const BandPlan<float>> band_;
};

// Heads of one launch: equal shapes, valid tokens only (mask_mode=subsequence has compacted them).
std::vector<PlanResult<float>> bandedBatch(const AttentionBatch<float>& heads, const BandedParams& params,
                                           const DeviceRequest& request, const DenseKernels& kernels,
                                           Feedback& feedback) {
  AttentionBatch<float> systems;
  for (const auto& head : heads) {
    checkScaledScoreBound(head.Q, head.K, params.eps);
    systems.push_back(params.dustbin ? banded::withDustbin(head) : head);
  }
  const AttentionInput<float>& first = systems.front();
  const Eigen::Index nq = first.Q.rows(), nk = first.K.rows(), d = first.Q.cols();
  const Eigen::Index n0q = heads.front().Q.rows(), n0k = heads.front().K.rows();
  const Eigen::Index dv = first.V ? first.V->cols() : 0;
  const Eigen::Index W = systemHalfWidth(params, nq, nk);
  const auto [logMu, logNu] = banded::logMarginals<float>(nq, nk, W);
  const float scale = float(nq);
  const std::vector<float> q = stacked(systems, [](const AttentionInput<float>& h) -> const MatF& { return h.Q; });
  const std::vector<float> k = stacked(systems, [](const AttentionInput<float>& h) -> const MatF& { return h.K; });
  const std::vector<float> v =
      dv ? stacked(systems, [](const AttentionInput<float>& h) -> const MatF& { return *h.V; }) : std::vector<float>{};
  const cuda::AttentionProblem problem =
      cuda::batchedProblem(int(systems.size()), int(nq), int(nk), int(d), q.data(), k.data(), v.data(), int(dv),
                           toVector(logMu), toVector(logNu), scale);

  cuda::CudaOptions options;
  options.histories = true;
  options.errors = true;
  options.canceled = [&feedback] { return feedback.isCanceled(); };
  const cuda::BandedCudaResult g =
      kernels.banded(problem, {W, params.baseSteps, params.tailSteps, params.eps}, options);
  // The band of scores now: the plan was asked for, or the dustbin's masses need plan products.
  const bool formBand = request.densePlan || params.dustbin;
  const std::vector<float> bands = formBand ? kernels.bandScores(problem, W, params.eps) : std::vector<float>{};

  std::vector<PlanResult<float>> results(heads.size());
  for (size_t h = 0; h < heads.size(); ++h) {
    PlanResult<float>& r = results[h];
    setMarginalTargets<float>(logMu, logNu, scale, r);
    setHeadDuals(g, h, nq, nk, r);  // the run records errors: r.errors is the returned plan's
    if (dv) r.output = MatF(batchItem(g.output, h, nq, dv).topRows(n0q));
    // The plan's potentials in eps units (any gauge: the plan is the same).
    const Vec<float> ut = r.u / float(params.eps), vt = r.v / float(params.eps);
    std::shared_ptr<const BandScores<float>> X;
    if (formBand) {
      X = std::make_shared<const BandScores<float>>(batchItem(bands, h, nq, 2 * W + 1), nk, W);
      r.plan = Plan<float>(std::make_shared<const BandPlan<float>>(X, ut, vt, scale, n0q, n0k));
    } else {
      BandHead head{systems[h].Q, systems[h].K, problem.logMu, problem.logNu, scale};
      r.plan = Plan<float>(std::make_shared<const DeviceBandPlan>(std::move(head), ut, vt, params.eps, W, kernels));
    }
    banded::finishResult<float>(params, X.get(), ut, vt, scale, n0q, n0k, batchVector(g.rowSums, h, nq),
                                batchVector(g.colSums, h, nk), r);
    r.seconds = g.seconds;  // the launch's wall time, shared by its heads
    r.backend = Backend::Cuda;
  }
  return results;
}

}  // namespace

std::vector<PlanResult<float>> bandedOnDevice(const AttentionBatch<float>& heads, const BandedParams& params,
                                              const DeviceRequest& request, const DenseKernels& kernels,
                                              Feedback& feedback) {
  checkBandedParams(params);
  return runInDeviceBatches(heads, params.maskMode, [&](const AttentionBatch<float>& batch, const std::optional<Mask>&) {
    return bandedBatch(batch, params, request, kernels, feedback);
  });
}

}  // namespace tl
