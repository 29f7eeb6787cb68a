#include "ops/esp/esp.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.h"
#include "common/parallel.h"
#include "ops/esp/esp_device.h"
#include "ops/esp/esp_result.h"
#include "ops/esp/sliced_plan.h"
#include "ops/esp/soft_sort.h"
#include "ops/family.h"
#include "ops/log_domain.h"
#include "ops/marginals.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

// Everything the hard path needs, with nothing n×n: per-slice tie groups and couplings, and D_l
// (docs/operators/esp.md#lazy-path); with the queries and keys they were computed on (compat applied) and the
// slice directions θ, which the soft plan and the result's extras use too.
template <class T>
struct HardSlices {
  const AttentionInput<T>* input;
  std::optional<std::pair<Mat<T>, Mat<T>>> scaled;  // compat=reference-code: Q and K scaled by d^{-1/2}
  Mat<T> theta;
  std::vector<HardSlice> slices;
  Vec<T> costs;
  // Q and K as ESP compares them: the input's own under compat=paper (not copied: they are read in place).
  const Mat<T>& Q() const { return scaled ? scaled->first : input->Q; }
  const Mat<T>& K() const { return scaled ? scaled->second : input->K; }
};

// s_l = x·θ_l of every slice (rows) and token (columns), each the sum cuda::espProjection forms (one FMA per
// feature in increasing order): identical tokens tie wherever they sit, and the device's projections are these
// bit for bit. The loop runs over the slices innermost, on θᵀ's contiguous rows, so it vectorises; each
// s_l's own chain of FMAs is unchanged. Slices as rows because each slice sorts its own projections: read as
// columns of a token-major matrix, every value of a slice sat on a cache line of its own (at n = 32768 the
// slices read 1 GB per call that way).
template <class T>
Mat<T> projections(const Mat<T>& X, const Mat<T>& theta) {
  const Eigen::Index slices = theta.rows(), d = X.cols();
  // The axis slicer's directions are the feature axes, so each projection is a coordinate: x + 0 is bit for bit
  // what the chain below gives (its other terms are exact zeros, and −0 + 0 = +0 there too), without L·d
  // multiply-adds per token.
  Mat<T> out(slices, X.rows());
  if (slices == d && theta == Mat<T>::Identity(d, d)) {
    parallelFor(X.rows(), double(X.size()), [&](Eigen::Index begin, Eigen::Index end) {
      out.middleCols(begin, end - begin) = (X.middleRows(begin, end - begin).array() + T(0)).matrix().transpose();
    });
    return out;
  }
  const Mat<T> thetaT = theta.transpose();  // d × L
  const double work = double(X.rows()) * double(slices) * double(d);
  parallelFor(X.rows(), work, [&](Eigen::Index begin, Eigen::Index end) {
    std::vector<T> buffer(static_cast<std::size_t>(slices));
    T* s = buffer.data();
    for (Eigen::Index i = begin; i < end; ++i) {
      std::fill(s, s + slices, T(0));
      for (Eigen::Index c = 0; c < d; ++c) {
        const T x = X(i, c);
        const T* directionsAtC = thetaT.row(c).data();
        for (Eigen::Index l = 0; l < slices; ++l) s[l] = std::fma(x, directionsAtC[l], s[l]);
      }
      // Consecutive tokens fill neighbouring entries of the same L lines, which stay in L1 meanwhile.
      for (Eigen::Index l = 0; l < slices; ++l) out(l, i) = s[l];
    }
  });
  return out;
}

template <class T>
HardSlices<T> hardSlices(const AttentionInput<T>& in, const EspParams& p, Feedback& feedback) {
  HardSlices<T> h;
  h.input = &in;
  if (p.compat == EspCompat::ReferenceCode) h.scaled = espQueriesAndKeys(in, p);
  const Mat<T>& Q = h.Q();
  const Mat<T>& K = h.K();
  h.theta = sliceDirections(p.slices, int(Q.cols())).template cast<T>();
  const Mat<T>& theta = h.theta;
  const Mat<T> projQ = projections(Q, theta), projK = projections(K, theta);  // s^Q_l, s^K_l as rows
  const auto coupling = rankCoupling(int(Q.rows()), int(K.rows()), p.rankCoupling);
  h.slices.resize(size_t(theta.rows()));
  h.costs.resize(theta.rows());
  // Slices are independent (two sorts and a cost each), handed out to the cores one at a time: tied slices take
  // longer, and a core the machine lends elsewhere for a while then holds back fewer slices than a fixed half of
  // them would. A cancel is seen before and after them.
  feedback.throwIfCanceled();
  parallelForEach(theta.rows(), [&](Eigen::Index l) {
    h.slices[size_t(l)] = hardSlice<T>(projQ.row(l).transpose(), projK.row(l).transpose(), coupling, p.ties);
    h.costs(l) = sliceCost(h.slices[size_t(l)], Q, K, p.costExponent());
  });
  feedback.throwIfCanceled();
  return h;
}

// C_ij = ‖q_i − k_j‖^p.
template <class T>
Mat<T> costMatrix(const Mat<T>& Q, const Mat<T>& K, double p) {
  Mat<T> C(Q.rows(), K.rows());
  for (Eigen::Index i = 0; i < Q.rows(); ++i)
    for (Eigen::Index j = 0; j < K.rows(); ++j) C(i, j) = groundCost<T>((Q.row(i) - K.row(j)).squaredNorm(), p);
  return C;
}

// Λ·R^K: row r of the result mixes the key-rank rows of R^K that rank r is coupled to.
template <class T>
Mat<T> coupleRanks(const std::vector<RankCouplingEntry>& coupling, const Mat<T>& keySort, Eigen::Index nq) {
  Mat<T> out = Mat<T>::Zero(nq, keySort.cols());
  for (const auto& e : coupling) out.row(e.r) += T(e.mass) * keySort.row(e.s);
  return out;
}

template <class T>
struct SoftPlan {
  Mat<T> plan;  // attention scale
  Vec<T> costs;
};

// docs/operators/esp.md#soft-sorting: U_l = R^Qᵀ Λ R^K with SoftSort matrices, D_l = <C, U_l>, accumulated
// over slices with an online (running) softmax so that only one n_q×n_k plan is held at a time.
template <class T>
SoftPlan<T> softPlan(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& theta, const EspParams& p, Feedback& feedback) {
  const Eigen::Index nq = Q.rows(), nk = K.rows();
  const Mat<T> projQ = Q * theta.transpose(), projK = K * theta.transpose();
  const auto coupling = rankCoupling(int(nq), int(nk), p.rankCoupling);
  const Mat<T> C = costMatrix(Q, K, p.costExponent());
  SoftPlan<T> s;
  s.costs.resize(theta.rows());
  Mat<T> acc = Mat<T>::Zero(nq, nk);
  T runningMax = -std::numeric_limits<T>::infinity(), total = 0;
  for (Eigen::Index l = 0; l < theta.rows(); ++l) {
    feedback.throwIfCanceled();
    const Mat<T> querySort = softSort<T>(projQ.col(l), p.sortTemp);
    const Mat<T> keySort = softSort<T>(projK.col(l), p.sortTemp);
    const Mat<T> U = querySort.transpose() * coupleRanks(coupling, keySort, nq);
    s.costs(l) = (C.array() * U.array()).sum();
    const T score = -T(p.tau) * s.costs(l);
    const T newMax = std::max(runningMax, score);
    const T decay = std::exp(runningMax - newMax), gain = std::exp(score - newMax);
    acc = acc * decay + gain * U;
    total = total * decay + gain;
    runningMax = newMax;
    feedback.setProgress(double(l + 1) / double(theta.rows()), "esp soft sort");
  }
  s.plan = acc * (T(nq) / total);
  return s;
}

template <class T>
PlanResult<T> espOnValid(const AttentionInput<T>& in, const EspParams& p, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  HardSlices<T> hard = hardSlices(in, p, feedback);
  // Hard: the plan stays a set of weighted slice matchings, nothing n×n (sliced_plan.h).
  PlanResult<T> r = hardEspResult<T>(std::move(hard.slices), hard.costs, hard.theta, p.tau, nq, nk);
  if (p.sort == SortMode::Soft) {
    checkDenseSize(std::max(nq, nk), std::max(nq, nk), sizeof(T), "ESP SoftSort");
    SoftPlan<T> soft = softPlan(hard.Q(), hard.K(), hard.theta, p, feedback);
    r.extras[EspExtras::hardDistance] =
        Mat<T>::Constant(1, 1, (soft.plan - r.plan.structure()->materialize()).cwiseAbs().maxCoeff());
    r.plan = std::move(soft.plan);
    r.extras[EspExtras::weights] = sliceWeights(soft.costs, p.tau);
    r.extras[EspExtras::costs] = soft.costs;
    setEspTargetsAndErrors(r);
  }
  if (in.V) r.output = r.plan.apply(*in.V);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

template <class T>
Vec<T> sliceWeights(const Vec<T>& costs, double tau) {
  // An infinite cost (squared distances of projections near 1e154 in float64, 1e19 in float32) would make every
  // weight NaN through inf − inf; refuse it before it reaches the plan (docs/conventions.md#overflow).
  if (!costs.allFinite())
    throw InvalidArgument(std::string("esp: the slice costs D_l overflow ") + (sizeof(T) == 4 ? "float32" : "float64") +
                          ": the queries and keys are too large; scale them down" +
                          (sizeof(T) == 4 ? " (or use float64)" : ""));
  // Scalar std::exp: a far-off slice gets exactly 0 (Eigen's vectorised exp stops at a denormal), so large
  // tau gives an exact one-hot weight and G = U_argmin (docs/operators/esp.md#checks).
  const Vec<T> e = (-T(tau) * (costs.array() - costs.minCoeff())).unaryExpr([](T x) { return std::exp(x); }).matrix();
  return e / e.sum();
}

template <class T>
PlanResult<T> espAttention(const AttentionInput<T>& input, const EspParams& params, Feedback& feedback) {
  params.check();
  validateInput(input);
  PlanResult<T> r = runOnValidSubsequence<T>(
      input, [&](const AttentionInput<T>& valid) { return espOnValid(valid, params, feedback); });
  if (input.mask && !input.mask->all()) widenEspMatchings(r, *input.mask);
  return r;
}

template <class T>
Mat<T> espLazyOutput(const AttentionInput<T>& input, const EspParams& params, Feedback& feedback) {
  if (params.sort != SortMode::Hard)
    throw InvalidArgument("esp: the lazy path applies hard plans only; use sort=hard or the dense plan");
  if (!input.V) throw InvalidArgument("esp: the lazy path computes O = A·V and needs V");
  if (input.mask && !input.mask->all()) return *espAttention(input, params, feedback).output;
  // Unpadded (every model's inference): espAttention's output without the plan object, the extras and the
  // marginal check that the views read, which cost as much again as the output at model sizes.
  params.check();
  validateInput(input);
  const HardSlices<T> hard = hardSlices(input, params, feedback);
  const Eigen::Index nq = input.Q.rows();
  return slicedProduct(hard.slices, sliceWeights(hard.costs, params.tau), nq, *input.V, nq, false);
}

template Vec<float> sliceWeights(const Vec<float>&, double);
template Vec<double> sliceWeights(const Vec<double>&, double);
template PlanResult<float> espAttention(const AttentionInput<float>&, const EspParams&, Feedback&);
template PlanResult<double> espAttention(const AttentionInput<double>&, const EspParams&, Feedback&);
template Mat<float> espLazyOutput(const AttentionInput<float>&, const EspParams&, Feedback&);
template Mat<double> espLazyOutput(const AttentionInput<double>&, const EspParams&, Feedback&);

void registerEsp(OperatorRegistry& registry) {
  CudaPath<EspParams> cuda;
  cuda.run = espOnDevice;  // both sort modes (esp_device.h)
  registry.add(familyInfo<EspParams>(
      {{"esp", "ESP (ESPFormer)",
        "expected sliced transport plan: per-slice sorted matchings averaged with weights softmax(−tau·D_l); "
        "exactly doubly stochastic with sort=hard"},
       espParamBindings(),
       {Backend::Torch},
       [](const EspParams& p) { return p.sort == SortMode::Hard; },
       cuda},
      [](const auto& input, const EspParams& p, Feedback& f) { return espAttention(input, p, f); },
      [](const auto& input, const EspParams& p, Feedback& f) { return espLazyOutput(input, p, f); }));
}

}  // namespace tl
