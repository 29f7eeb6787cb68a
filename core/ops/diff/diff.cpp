#include "ops/diff/diff.h"

#include <chrono>
#include <cmath>

#include "common/errors.h"
#include "common/parallel.h"
#include "ops/diff/diff_device.h"
#include "ops/family.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/softmax/row_softmax.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

// One softmax map of the pair (Q[:, half], K[:, half]) with its row and column sums, from the fused row softmax
// (ops/softmax/row_softmax.h); its scores use the half width h (s = 1/√h, docs/operators/diff.md#resolutions).
template <class T>
RowSoftmax<T> halfSoftmax(const AttentionInput<T>& in, Eigen::Index half) {
  const Eigen::Index h = in.Q.cols() / 2;
  const Mat<T> Q = in.Q.middleCols(half * h, h), K = in.K.middleCols(half * h, h);
  RowSoftmax<T> map = rowSoftmax<T>(Q, K, nullptr, nullptr);
  checkScaledScores(map.maxAbsScore, 1.0);
  return map;
}

template <class T>
PlanResult<T> diffOnValid(const AttentionInput<T>& in, double lambda, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  checkDenseSize(nq, nk, sizeof(T), "diff");
  feedback.throwIfCanceled();
  RowSoftmax<T> first = halfSoftmax(in, 0);
  feedback.throwIfCanceled();
  const RowSoftmax<T> second = halfSoftmax(in, 1);
  // A and its row and column sums are linear in the two maps: each is the first map's minus lambda times the
  // second's. So the difference costs one pass over the maps (in the first one's buffer, rows split across
  // threads) and the marginals none; A·V is then one product (not one per map, which would cost n_q·n_k·d_v
  // multiply-adds more than the pass it saves).
  const T l = T(lambda);
  parallelFor(nq, double(nq) * double(nk), [&](Eigen::Index begin, Eigen::Index end) {
    first.plan.middleRows(begin, end - begin) -= l * second.plan.middleRows(begin, end - begin);
  });
  PlanResult<T> r;
  r.plan = std::move(first.plan);
  if (in.V) r.output = r.plan.apply(*in.V);
  r.rowTarget = Vec<T>::Ones(nq);
  r.colTarget = Vec<T>::Constant(nk, T(nq) / T(nk));
  r.errors = marginalErrorsFromSums<T>(first.rowSums - l * second.rowSums, r.rowTarget,
                                       first.colSums - l * second.colSums, r.colTarget);
  r.errorHistory = {r.errors};
  feedback.setProgress(1.0, "diff");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

const ParamBindings<DiffParams>& diffParamBindings() {
  static const ParamBindings<DiffParams> bindings = [] {
    ParamSpec lambda = realParam("lambda", -2, 2, 0.5,
                                 "DiffTransformer mixing weight: A = softmax(Q1K1ᵀ/√h) − lambda·softmax(Q2K2ᵀ/√h)");
    lambda.uiMin = 0;  // the slider covers the usual range; the entry box accepts [-2, 2]
    lambda.uiMax = 1;
    ParamBindings<DiffParams> b;
    b.field(lambda, &DiffParams::lambda);
    bindMaskMode(b, false);
    return b;
  }();
  return bindings;
}

DiffParams::DiffParams() { diffParamBindings().fillDefaults(*this); }
DiffParams DiffParams::from(const ParamSet& resolved) { return diffParamBindings().fill(resolved); }

void checkDiffHeadDimension(Eigen::Index d) {
  if (d % 2 != 0)
    throw InvalidArgument("diff: the head dimension d = " + std::to_string(d) +
                          " is odd; DiffTransformer splits Q and K into two halves, so d must be even");
}

template <class T>
PlanResult<T> diffAttention(const AttentionInput<T>& input, const DiffParams& params, Feedback& feedback) {
  diffParamBindings().check(params, "diff");
  validateInput(input);
  checkDiffHeadDimension(input.Q.cols());
  return runOnValidSubsequence<T>(
      input, [&](const AttentionInput<T>& valid) { return diffOnValid(valid, params.lambda, feedback); });
}

template PlanResult<float> diffAttention(const AttentionInput<float>&, const DiffParams&, Feedback&);
template PlanResult<double> diffAttention(const AttentionInput<double>&, const DiffParams&, Feedback&);

void registerDiff(OperatorRegistry& registry) {
  CudaPath<DiffParams> cuda;
  cuda.run = diffOnDevice;
  registry.add(familyInfo<DiffParams>(
      {{"diff", "DiffTransformer",
        "difference of two softmax maps from the two halves of the head dimension (Q = [Q1|Q2], K = [K1|K2], d must "
        "be even); not a transport plan: entries can be negative, rows sum to 1 − lambda"},
       diffParamBindings(),
       {},
       {},
       cuda},
      [](const auto& input, const DiffParams& p, Feedback& f) { return diffAttention(input, p, f); }));
}

}  // namespace tl
