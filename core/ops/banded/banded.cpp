#include "ops/banded/banded.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <optional>

#include "common/errors.h"
#include "ops/banded/band_plan.h"
#include "ops/banded/banded_device.h"
#include "ops/banded/banded_forward.h"
#include "ops/family.h"
#include "ops/log_domain.h"
#include "ops/mask_mode.h"
#include "ops/score_geometry.h"
#include "ops/sinkhorn/sinkhorn_loop.h"
#include "ops/subsequence.h"

namespace tl {

const ParamBindings<BandedParams>& bandedParamBindings() {
  static const ParamBindings<BandedParams> bindings = [] {
    ParamBindings<BandedParams> b;
    b.field(intParam("W", 0, 1e7, 16, "half-band width: (i, j) in the support iff |i − j| ≤ W", 256), &BandedParams::W);
    b.field(intParam("base_steps", 0, 1e5, 15, "stopped base: full (row+column) steps, centred", 200),
            &BandedParams::baseSteps);
    b.field(intParam("tail_steps", 0, 1e5, 2, "differentiable tail: full (row+column) steps, raw", 8),
            &BandedParams::tailSteps);
    b.field(intParam("tile", 1, 1e6, 64, "tile size for the per-tile marginal errors", 512), &BandedParams::tile);
    b.field(positiveParam("eps", 1.0, "temperature dividing the scores: kernel exp(S/eps)"), &BandedParams::eps);
    b.field(boolParam("dustbin", false, "single active dustbin token per side (unit mass; makes the support dense)"),
            &BandedParams::dustbin);
    bindMaskMode(b, false);
    return b;
  }();
  return bindings;
}

void checkBandedParams(const BandedParams& p) {
  bandedParamBindings().check(p, "banded");
  if (p.baseSteps + p.tailSteps < 1)
    throw InvalidArgument("banded: base_steps + tail_steps = 0; at least one full step is needed");
}

Eigen::Index systemHalfWidth(const BandedParams& p, Eigen::Index nq, Eigen::Index nk) {
  return p.dustbin ? std::max<Eigen::Index>(p.W, std::max(nq, nk)) : p.W;
}

namespace banded {

template <class T>
AttentionInput<T> withDustbin(const AttentionInput<T>& in) {
  AttentionInput<T> out;
  out.Q = Mat<T>::Zero(in.Q.rows() + 1, in.Q.cols());
  out.Q.topRows(in.Q.rows()) = in.Q;
  out.K = Mat<T>::Zero(in.K.rows() + 1, in.K.cols());
  out.K.topRows(in.K.rows()) = in.K;
  if (in.V) {
    out.V = Mat<T>::Zero(in.V->rows() + 1, in.V->cols());
    out.V->topRows(in.V->rows()) = *in.V;
  }
  return out;
}

template <class T>
std::pair<Vec<T>, Vec<T>> logMarginals(Eigen::Index nq, Eigen::Index nk, Eigen::Index halfWidth) {
  // Every active row and column has mass 1 in attention scale A = n_q·P; tokens with no support entry are
  // inactive (rows i ≥ n_k + W on rectangles, docs/operators/banded.md#rectangles).
  const T logUnit = -std::log(T(nq)), negInf = -std::numeric_limits<T>::infinity();
  return {bandActiveRows(nq, nk, halfWidth).select(Vec<T>::Constant(nq, logUnit), negInf).matrix(),
          bandActiveCols(nq, nk, halfWidth).select(Vec<T>::Constant(nk, logUnit), negInf).matrix()};
}

namespace {

// Max |sum − target| per block of `tile` consecutive entries (the banded view's per-tile errors).
template <class T>
Mat<T> tileErrors(const Vec<T>& sums, const Vec<T>& target, int tile) {
  const Eigen::Index tiles = (sums.size() + tile - 1) / tile;
  Mat<T> out(tiles, 1);
  for (Eigen::Index b = 0; b < tiles; ++b) {
    const Eigen::Index len = std::min<Eigen::Index>(tile, sums.size() - b * tile);
    out(b, 0) = (sums.segment(b * tile, len) - target.segment(b * tile, len)).cwiseAbs().maxCoeff();
  }
  return out;
}

}  // namespace

template <class T>
void finishResult(const BandedParams& p, const BandScores<T>* X, const Vec<T>& ut, const Vec<T>& vt, T scale,
                  Eigen::Index n0q, Eigen::Index n0k, const Vec<T>& rowSums, const Vec<T>& colSums,
                  PlanResult<T>& r) {
  if (p.dustbin) {
    // Report the real tokens; the dustbin's share is what each real row/column sends to it (receives from it).
    const Eigen::Index nq = X->rows(), nk = X->cols();
    auto unit = [](Eigen::Index n) {
      Mat<T> e = Mat<T>::Zero(n, 1);
      e(n - 1, 0) = T(1);
      return e;
    };
    r.extras["banded_dustbin_query_mass"] = X->apply(ut, vt, scale, unit(nk)).topRows(n0q);
    r.extras["banded_dustbin_key_mass"] = X->applyTransposed(ut, vt, scale, unit(nq)).topRows(n0k);
    r.u = Vec<T>(r.u.head(n0q));
    r.v = Vec<T>(r.v.head(n0k));
    r.uHistory = Mat<T>(r.uHistory.leftCols(n0q));
    r.vHistory = Mat<T>(r.vHistory.leftCols(n0k));
  }
  r.extras["banded_tile_row_errors"] = tileErrors<T>(rowSums, r.rowTarget, p.tile);
  r.extras["banded_tile_col_errors"] = tileErrors<T>(colSums, r.colTarget, p.tile);
  if (p.dustbin) {
    // Targets of the real tokens: their unit mass minus what the plan sends to (receives from) the dustbin.
    r.rowTarget = Vec<T>(r.rowTarget.head(n0q)) - Vec<T>(r.extras["banded_dustbin_query_mass"].col(0));
    r.colTarget = Vec<T>(r.colTarget.head(n0k)) - Vec<T>(r.extras["banded_dustbin_key_mass"].col(0));
  }
}

template AttentionInput<float> withDustbin(const AttentionInput<float>&);
template AttentionInput<double> withDustbin(const AttentionInput<double>&);
template std::pair<Vec<float>, Vec<float>> logMarginals<float>(Eigen::Index, Eigen::Index, Eigen::Index);
template std::pair<Vec<double>, Vec<double>> logMarginals<double>(Eigen::Index, Eigen::Index, Eigen::Index);
template void finishResult(const BandedParams&, const BandScores<float>*, const Vec<float>&, const Vec<float>&, float,
                           Eigen::Index, Eigen::Index, const Vec<float>&, const Vec<float>&, PlanResult<float>&);
template void finishResult(const BandedParams&, const BandScores<double>*, const Vec<double>&, const Vec<double>&,
                           double, Eigen::Index, Eigen::Index, const Vec<double>&, const Vec<double>&,
                           PlanResult<double>&);

}  // namespace banded

namespace {

// The banded forward on an input without padding. The plan stays a band (band_plan.h): memory O(n·W).
template <class T>
PlanResult<T> bandedOnValid(const AttentionInput<T>& original, const BandedParams& p, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  std::optional<AttentionInput<T>> withBin;  // the input with its dustbin tokens, only when asked: no copy otherwise
  if (p.dustbin) withBin = banded::withDustbin(original);
  const AttentionInput<T>& in = withBin ? *withBin : original;
  const Eigen::Index nq = in.Q.rows(), nk = in.K.rows();
  const Eigen::Index W = systemHalfWidth(p, nq, nk);
  const auto X = std::make_shared<const BandScores<T>>(in.Q, in.K, T(p.eps), W);
  const auto [logMu, logNu] = banded::logMarginals<T>(nq, nk, W);
  const T scale = T(nq);

  PlanResult<T> r;
  Vec<T> ut, vt;
  SinkhornLoopOptions options;
  options.budget = p.budget();
  options.centredFullSteps = p.baseSteps;
  options.stage = "banded";
  runSinkhornLoop<T>(*X, logMu, logNu, T(p.eps), scale, options, feedback, r, ut, vt);

  // Final sums from one more pass each way, for the per-tile errors of the banded view.
  const Vec<T> rowSums = sinkhorn_loop::marginalSums(ut, X->rowLogSumExp(vt), scale);
  const Vec<T> colSums = sinkhorn_loop::marginalSums(vt, X->colLogSumExp(ut), scale);
  const Eigen::Index n0q = original.Q.rows(), n0k = original.K.rows();
  r.plan = Plan<T>(std::make_shared<const BandPlan<T>>(X, ut, vt, scale, n0q, n0k));
  if (original.V) r.output = r.plan.apply(*original.V);
  banded::finishResult<T>(p, X.get(), ut, vt, scale, n0q, n0k, rowSums, colSums, r);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

}  // namespace

BandedParams::BandedParams() { bandedParamBindings().fillDefaults(*this); }

BandedParams BandedParams::from(const ParamSet& resolved) {
  BandedParams p = bandedParamBindings().fill(resolved);
  checkBandedParams(p);
  return p;
}

template <class T>
PlanResult<T> bandedAttention(const AttentionInput<T>& input, const BandedParams& params, Feedback& feedback) {
  checkBandedParams(params);
  validateInput(input);
  // Padding: the band acts on the valid sub-sequence (mask_mode=subsequence), so with padding inside the
  // sequence neighbours are counted among valid tokens, not raw positions.
  return runOnValidSubsequence<T>(
      input, [&](const AttentionInput<T>& valid) { return bandedOnValid(valid, params, feedback); });
}

template <class T>
Mat<T> bandedOutput(const AttentionInput<T>& input, const BandedParams& params, Feedback& feedback) {
  if (!input.V) throw InvalidArgument("banded: the lazy path computes A·V and needs V");
  return *bandedAttention(input, params, feedback).output;
}

template PlanResult<float> bandedAttention(const AttentionInput<float>&, const BandedParams&, Feedback&);
template PlanResult<double> bandedAttention(const AttentionInput<double>&, const BandedParams&, Feedback&);
template Mat<float> bandedOutput(const AttentionInput<float>&, const BandedParams&, Feedback&);
template Mat<double> bandedOutput(const AttentionInput<double>&, const BandedParams&, Feedback&);

void registerBanded(OperatorRegistry& registry) {
  CudaPath<BandedParams> cuda;
  cuda.run = bandedOnDevice;
  registry.add(familyInfo<BandedParams>(
      {{"banded", "Banded Sinkhorn",
        "unit-target Sinkhorn on the band |i−j| ≤ W (raw indices; on rectangles rows i ≥ n_k+W have no support), "
        "stopped base + tail; equivalent budget T = 2·(base_steps+tail_steps)"},
       bandedParamBindings(),
       {},
       [](const BandedParams&) { return true; },
       cuda},
      [](const auto& input, const BandedParams& p, Feedback& f) { return bandedAttention(input, p, f); },
      [](const auto& input, const BandedParams& p, Feedback& f) { return bandedOutput(input, p, f); }));
}

}  // namespace tl
