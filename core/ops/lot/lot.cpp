#include "ops/lot/lot.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include "common/errors.h"
#include "io/npy.h"
#include "ops/log_domain.h"
#include "ops/lot/lot_coupling.h"
#include "ops/registry.h"
#include "ops/subsequence.h"

namespace tl {
namespace {

void validateParams(const LotParams& p) {
  if (p.T < 1) throw InvalidArgument("lot: T = " + std::to_string(p.T) + " is not valid; expected T >= 1");
  if (!(p.eps > 0) || !std::isfinite(p.eps))
    throw InvalidArgument("lot: eps = " + std::to_string(p.eps) + " is not valid; expected eps > 0");
  if (!(p.massTemp > 0) || !std::isfinite(p.massTemp))
    throw InvalidArgument("lot: mass_temp = " + std::to_string(p.massTemp) + " is not valid; expected mass_temp > 0");
  if (p.r < 1) throw InvalidArgument("lot: r = " + std::to_string(p.r) + " is not valid; expected r >= 1 pivots");
  if (p.maskMode != MaskMode::Subsequence)
    throw InvalidArgument("lot: mask_mode = " + std::string(maskModeName(p.maskMode)) +
                          " is not supported; expected mask_mode=subsequence (docs/operators/lot.md#masks)");
  if (p.pivotInit == PivotInit::File && p.pivots.size() == 0)
    throw InvalidArgument("lot: pivot_init=file needs pivots=PATH.npy (an r×d array of pivot locations)");
  if (p.pivotInit != PivotInit::File && p.pivots.size() != 0)
    throw InvalidArgument(std::string("lot: pivots are given but pivot_init=") + pivotInitName(p.pivotInit) +
                          "; set pivot_init=file to use them, or leave pivots out");
}

// The pivot measure for the (valid) tokens of one run (lot_pivots.h).
template <class T>
LotPivots resolvePivots(const AttentionInput<T>& valid, const LotParams& p, Feedback& feedback) {
  LotPivots pivots;
  switch (p.pivotInit) {
    case PivotInit::File:
      pivots.locations = p.pivots;
      pivots.massLogits = VecD::Zero(p.r);
      break;
    case PivotInit::Gaussian:
      pivots = gaussianPivots(p.r, valid.headDim(), p.seed);
      break;
    case PivotInit::KMeans: {
      MatD points(valid.Q.rows() + valid.K.rows(), valid.headDim());
      points << valid.Q.template cast<double>(), valid.K.template cast<double>();
      pivots.locations = kmeansCentres(points, p.r, p.seed, feedback);
      pivots.massLogits = VecD::Zero(p.r);
      break;
    }
  }
  if (p.massLogits.size() != 0) pivots.massLogits = p.massLogits;
  validatePivots(pivots, p.r, valid.headDim());
  return pivots;
}

template <class T>
struct LotSolution {
  LotPivots pivots;
  LotCoupling<T> coupling;
};

// Both problems on an input without padding.
template <class T>
LotSolution<T> solveOnValid(const AttentionInput<T>& valid, const LotParams& p, bool trackErrors, Feedback& feedback) {
  const int n = std::min(valid.nQueries(), valid.nKeys());
  if (p.r > n)
    throw InvalidArgument("lot: r = " + std::to_string(p.r) + " pivots exceed n = " + std::to_string(n) +
                          " (valid) tokens; choose r <= " + std::to_string(n));
  LotSolution<T> s;
  s.pivots = resolvePivots(valid, p, feedback);
  s.coupling = solveLotCoupling<T>(valid.Q, valid.K, s.pivots.locations.template cast<T>(),
                                   logPivotMasses<T>(s.pivots.massLogits, p.massTemp), p.eps, p.T, trackErrors,
                                   feedback);
  return s;
}

template <class T>
PlanResult<T> lotOnValid(const AttentionInput<T>& valid, const LotParams& p, Feedback& feedback) {
  const auto start = std::chrono::steady_clock::now();
  checkDenseSize(valid.nQueries(), valid.nKeys(), sizeof(T), "LOT (dense plan; its lazy output needs no n×n)");
  const LotSolution<T> s = solveOnValid(valid, p, /*trackErrors=*/true, feedback);
  const LotCoupling<T>& c = s.coupling;

  PlanResult<T> r;
  r.plan = c.dense();
  if (valid.V) r.output = c.apply(*valid.V);
  r.errorHistory = c.errorHistory;
  r.errors = c.errorHistory.back();
  r.rowTarget = c.rowTarget();
  r.colTarget = c.colTarget();
  r.extras["lot_P1"] = c.P1;
  r.extras["lot_P2"] = c.P2;
  r.extras["lot_pivot_masses"] = c.logw.array().exp().matrix();
  r.extras["lot_pivots"] = s.pivots.locations.template cast<T>();
  r.extras["lot_u1"] = c.u1;
  r.extras["lot_v1"] = c.v1;
  r.extras["lot_u2"] = c.u2;
  r.extras["lot_v2"] = c.v2;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

// Padded tokens: zero rows of P1, zero columns of P2 and potentials u1, v2 set to 0
// (docs/operators/lot.md#masks).
template <class T>
void padExtras(PlanResult<T>& r, const Mask& mask) {
  const auto idx = validIndices(mask);
  const Eigen::Index n = mask.size();
  for (const char* name : {"lot_P1", "lot_u1", "lot_v2"}) r.extras[name] = scatterRows<T>(r.extras[name], idx, n);
  r.extras["lot_P2"] = scatterRows<T>(r.extras["lot_P2"].transpose(), idx, n).transpose();
}

}  // namespace

LotParams LotParams::from(const ParamSet& params) {
  LotParams p;
  p.r = int(getInt(params, "r"));
  p.eps = getReal(params, "eps");
  p.T = int(getInt(params, "T"));
  p.massTemp = getReal(params, "mass_temp");
  p.seed = uint64_t(getInt(params, "seed"));
  p.maskMode = parseMaskMode(getString(params, "mask_mode"));
  const auto pivotsPath = getOptionalString(params, "pivots");
  // auto: a pivots file means "use it" (and fixes r to its number of rows); otherwise k-means.
  const std::string init = getString(params, "pivot_init");
  p.pivotInit = init == "auto" ? (pivotsPath ? PivotInit::File : PivotInit::KMeans) : parsePivotInit(init);
  if (pivotsPath) {
    p.pivots = readNpyMatrix<double>(*pivotsPath);
    p.r = int(p.pivots.rows());
    p.pivots = readPivotLocations(*pivotsPath, p.r);
  }
  if (const auto logitsPath = getOptionalString(params, "mass_logits")) p.massLogits = readMassLogits(*logitsPath, p.r);
  validateParams(p);
  return p;
}

template <class T>
PlanResult<T> lotAttention(const AttentionInput<T>& input, const LotParams& params, Feedback& feedback) {
  validateParams(params);
  validateInput(input);
  PlanResult<T> r = runOnValidSubsequence<T>(
      input, [&](const AttentionInput<T>& valid) { return lotOnValid(valid, params, feedback); });
  if (input.mask && !input.mask->all()) padExtras(r, *input.mask);
  return r;
}

template <class T>
Mat<T> lotOutput(const AttentionInput<T>& input, const LotParams& params, Feedback& feedback) {
  validateParams(params);
  validateInput(input);
  if (!input.V) throw InvalidArgument("lot: the lazy output O = A·V needs values V");
  return applyOnValidSubsequence<T>(input, [&](const AttentionInput<T>& valid) {
    return solveOnValid(valid, params, /*trackErrors=*/false, feedback).coupling.apply(*valid.V);
  });
}

template PlanResult<float> lotAttention(const AttentionInput<float>&, const LotParams&, Feedback&);
template PlanResult<double> lotAttention(const AttentionInput<double>&, const LotParams&, Feedback&);
template Mat<float> lotOutput(const AttentionInput<float>&, const LotParams&, Feedback&);
template Mat<double> lotOutput(const AttentionInput<double>&, const LotParams&, Feedback&);

namespace {
class LotOperator : public TypedOperator<LotOperator> {
 public:
  explicit LotOperator(const ParamSet& params) : TypedOperator("lot", params), params_(LotParams::from(params)) {}
  template <class T>
  PlanResult<T> compute(const AttentionInput<T>& input, Feedback& feedback) const {
    return lotAttention(input, params_, feedback);
  }
  template <class T>
  Mat<T> lazyOutput(const AttentionInput<T>& input, Feedback& feedback) const {
    return lotOutput(input, params_, feedback);
  }

 private:
  LotParams params_;
};

}  // namespace

void registerLot(OperatorRegistry& registry) {
  const ParamSchema schema({
      intParam("r", 1, 4096, 32,
               "number of pivots, the rank of A (at most the number of tokens n); a pivots file sets it to its rows",
               128),
      positiveParam("eps", 1.0, "temperature dividing the scores of both problems: kernel exp(S/eps)"),
      intParam("T", 1, 100000, 5,
               "budget of each of the two problems: single normalisations, rows first (odd T: rows of A exact; even "
               "T: columns exact)",
               500),
      positiveParam("mass_temp", 0.5, "temperature dividing the pivot mass logits: w = softmax(logits/mass_temp)"),
      choiceParam("pivot_init", {"auto", "kmeans", "gaussian", "file"},
                  "pivot locations: auto = the pivots file when given, else kmeans; kmeans = k-means centres of "
                  "queries and keys (uniform masses); gaussian = N(0, 1/d) locations and N(0, 0.25) logits from "
                  "seed; file = the pivots file"),
      pathParam("pivots", "r×d .npy of pivot locations (pivot_init=auto or file)"),
      pathParam("mass_logits", "length-r .npy of pivot mass logits (replaces those of pivot_init)"),
      intParam("seed", 0, 2147483647, 0, "seed of the k-means++ seeding or of the Gaussian pivots", 1000),
      maskModeSpec(false),
  });
  registry.add({"lot", "LOT", "low-rank doubly stochastic attention through r pivots (two entropic problems, glued)",
                schema, [](const ParamSet& p) { return std::make_unique<LotOperator>(p); }});
}

}  // namespace tl
